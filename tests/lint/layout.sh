#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# layout.sh - every source file under user/, bpf/, include/ and scripts/ is
# named in README.md's Layout table or in docs/design.md, so a newcomer
# finds each file from the map and the map cannot go stale (issue 23).
#
# A source file is one git tracks there that is code or is installed as it
# is: a name ending in .c (.bpf.c too), .h, .sh, .bash, .py, .lua or .gp, a
# systemd unit (.service, .socket, .timer), or an executable (the Debian
# maintainer scripts). Templates the build fills in (*.in) are data, not
# sources.
#
# Named means either
#   - its path (user/lib/verbs.c) stands anywhere in the two files, or
#   - a table row whose first cell names a folder it is under (`user/lib/`,
#     or `scripts/` for scripts/lib/common.sh) has, between backticks, its
#     file name (`verbs.c`) or its path below that folder (`lib/common.sh`).
# A file name counts once per row: two files of one name under one row's
# folder are both named by it (none today).
#
# Usage: tests/lint/layout.sh
set -uo pipefail
cd "$(dirname "$0")/../.."

docs=(README.md docs/design.md)
for d in "${docs[@]}"; do
	[ -f "$d" ] || { echo "layout: $d is missing" >&2; exit 1; }
done

mapfile -t files < <(git ls-files user bpf include scripts | while IFS= read -r f; do
	case $f in
	*.in) continue ;;
	*.c | *.h | *.sh | *.bash | *.py | *.lua | *.gp | *.service | *.socket | *.timer) echo "$f" ;;
	*) [ -x "$f" ] && echo "$f" ;;
	esac
done)
[ ${#files[@]} -gt 0 ] || { echo "layout: no sources found (not a git checkout?)" >&2; exit 1; }

printf '%s\n' "${files[@]}" | awk -v ndocs="${#docs[@]}" '
	# the docs first (FILENAME is one of them), then the list of files on stdin
	FILENAME != "-" {
		text = text "\n" $0
		if ($0 !~ /^\|/)
			next
		# a table row: the folders of its first cell, the tokens of all of it
		split($0, cell, "|")
		first = cell[2]
		nrow++
		while (match(first, /`[^`]*\/`/)) {
			folder[nrow] = folder[nrow] " " substr(first, RSTART + 1, RLENGTH - 2)
			first = substr(first, RSTART + RLENGTH)
		}
		row = $0
		while (match(row, /`[^`]+`/)) {
			tok[nrow, substr(row, RSTART + 1, RLENGTH - 2)] = 1
			row = substr(row, RSTART + RLENGTH)
		}
		next
	}
	{
		f = $0
		total++
		# its path, not as the tail of a longer one
		re = f
		gsub(/[.+]/, "[&]", re)
		if (text ~ ("(^|[^A-Za-z0-9_./-])" re "([^A-Za-z0-9_/-]|$)"))
			next
		base = f
		sub(/.*\//, "", base)
		named = 0
		for (r = 1; r <= nrow && !named; r++) {
			n = split(folder[r], fs, " ")
			for (i = 1; i <= n && !named; i++) {
				d = fs[i]
				if (substr(f, 1, length(d)) != d)
					continue
				if ((r, base) in tok || (r, substr(f, length(d) + 1)) in tok)
					named = 1
			}
		}
		if (!named) {
			print f
			missing++
		}
	}
	END {
		if (missing) {
			printf "layout: %d of the %d source files (above) are named in neither README.md'"'"'s Layout nor docs/design.md\n", missing, total > "/dev/stderr"
			exit 1
		}
		printf "layout: all %d source files under user/, bpf/, include/ and scripts/ are named in README.md or docs/design.md\n", total
	}
' "${docs[@]}" -
