#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# check_policy_man.sh - xrl-policy(5) keeps in step with docs/policy.md:
# every key docs/policy.md names (the top-level keys, and the first column
# of each "| key |" table: interfaces, xdp and its rules, penalty, http and
# its rules) must appear as a word in docs/man/xrl-policy.5. A key added to
# the reference and not to the man page fails `make test`.
#
# Exit: 0 every key is there, 1 some are missing (named), 2 a file is missing.
set -u
cd "$(dirname "$0")/.."
MD=docs/policy.md
MAN=docs/man/xrl-policy.5
[ -r "$MD" ] && [ -r "$MAN" ] || { echo "check_policy_man: $MD or $MAN is missing" >&2; exit 2; }

# The keys: `word` (letters, digits, _) in the first cell of a table whose
# header's first cell is "key", and in the "Top-level keys:" sentence.
keys=$(awk '
	/^\| *key *\|/ { intab = 1; next }
	/^\|/ && intab { split($0, c, "|"); s = c[2]
		while (match(s, /`[a-z0-9_]+`/)) { print substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH) }
		next }
	{ intab = 0 }
	/Top-level keys:/ { top = 1 }
	top { s = $0
		while (match(s, /`[a-z0-9_]+`/)) { print substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH) }
		if ($0 ~ /optional\./) top = 0 }
' "$MD" | sort -u)
[ -n "$keys" ] || { echo "check_policy_man: no keys found in $MD (its tables changed shape?)" >&2; exit 2; }

# the man page as words: troff escapes (\-, \fB...) and requests' dots out
text=$(sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/^\.[A-Z][A-Z]* *//' "$MAN")
missing=()
n=0
for k in $keys; do
	n=$((n + 1))
	grep -qw -- "$k" <<<"$text" || missing+=("$k")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "check_policy_man: $MAN does not name these keys of $MD: ${missing[*]}" >&2
	exit 1
fi
echo "check_policy_man: all $n keys of $MD are in $MAN"
