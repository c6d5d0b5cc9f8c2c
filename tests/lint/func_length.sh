#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# func_length.sh - no function in user/ or bpf/ is longer than 100 lines.
#
# The limit keeps functions to one job (issue 15). A function counts from
# the line that names it to its closing brace. Universal Ctags parses the
# bodies (its end field), so a signature wrapped over several lines, a
# return type on a line of its own or a brace on the signature's line are
# all seen; the line-pattern check before it missed every function whose
# last signature line held no "(" (issue 23).
#
# The lint checks itself: every line that opens with "{" in those files
# (the tree's style for a function body) and every line that is "}" alone
# (where a body ends) must lie inside a function ctags reported, and each
# reported function must end on a line holding a "}". A function ctags
# cannot see fails the lint there, named by file and line, rather than
# going uncounted. ctags sees K&R definitions, and a function whose head a
# macro writes under the macro's name. A "{" at the start of a line inside
# a function (a block's brace out of style) is not a function: allowed.
#
# Needs universal-ctags (scripts/install-deps.sh).
# Usage: tests/lint/func_length.sh [MAX]
set -uo pipefail
cd "$(dirname "$0")/../.."
max=${1:-100}

if ! ctags --version 2>/dev/null | grep -q '^Universal Ctags'; then
	echo "func_length: needs Universal Ctags (package universal-ctags, scripts/install-deps.sh)" >&2
	exit 1
fi

mapfile -t files < <(find user bpf \( -name '*.c' -o -name '*.h' \) -type f | sort)
[ ${#files[@]} -gt 0 ] || { echo "func_length: no sources under user/ or bpf/" >&2; exit 1; }

# "file start end name" for each function definition (kind f: prototypes
# and macros are other kinds); headers are C here, not ctags' C++.
tags=$(ctags --languages=C --langmap=C:.c.h --c-kinds=f --sort=no -x \
	--_xformat='%F %n %{end} %N' "${files[@]}") || {
	echo "func_length: ctags failed" >&2
	exit 1
}

# Then, for each file, its lines: the spans are checked against them.
for f in "${files[@]}"; do
	awk -v f="$f" '{ print "L", f, NR, $0 }' "$f"
done | awk -v max="$max" -v nfiles="${#files[@]}" -v tags="$tags" '
	BEGIN {
		n = split(tags, t, "\n")
		for (i = 1; i <= n; i++) {
			if (split(t[i], w, " ") < 4)
				continue
			fn++
			file[fn] = w[1]; start[fn] = w[2] + 0; end[fn] = w[3] + 0; name[fn] = w[4]
			if (end[fn] < start[fn]) {
				printf "%s:%d: ctags found no end for %s\n", w[1], w[2], w[4]
				bad = 1
				continue
			}
			nof[w[1]]++
			idx[w[1], nof[w[1]]] = fn
			endat[w[1], end[fn]] = fn
			len = end[fn] - start[fn] + 1
			if (len > max) {
				printf "%s:%d: %s is %d lines\n", w[1], start[fn], w[4], len
				over++
			}
		}
	}
	$1 == "L" {
		f = $2; ln = $3 + 0
		line = $0
		sub(/^L [^ ]+ [0-9]+ /, "", line)
		if (line ~ /^\{/ || line ~ /^\}[ \t]*$/) {
			inside = 0
			for (i = 1; i <= nof[f]; i++) {
				k = idx[f, i]
				if (start[k] <= ln && ln <= end[k]) { inside = 1; break }
			}
			if (!inside) {
				printf "%s:%d: a body %s here that ctags saw no function around\n", f, ln,
				       line ~ /^\{/ ? "opens" : "closes"
				bad = 1
			}
		}
		if ((f, ln) in endat && line !~ /\}/) {
			k = endat[f, ln]
			printf "%s:%d: %s ends here by ctags, a line with no \"}\"\n", f, ln, name[k]
			bad = 1
		}
	}
	END {
		if (bad) {
			print "func_length: ctags and the sources disagree (above): the lint cannot count those functions" > "/dev/stderr"
			exit 1
		}
		if (over) {
			printf "func_length: %d function(s) over %d lines; split them along their seams\n", over, max > "/dev/stderr"
			exit 1
		}
		printf "func_length: %d functions in %d files of user/ and bpf/, none over %d lines\n", fn, nfiles, max
	}
'
