#!/usr/bin/env bash
# No function in user/ or bpf/ is longer than 100 lines (issue 15): the
# limit keeps functions to one job. Counts from the line that names the
# function to its closing brace, in the kernel style the tree uses (the
# body opens with "{" alone at the start of a line and closes with "}").
# Usage: tests/lint/func_length.sh [MAX]
set -uo pipefail
cd "$(dirname "$0")/../.."
max=${1:-100}
bad=0
while IFS= read -r f; do
	out=$(awk -v max="$max" -v file="$f" '
		/^\{/ && prev ~ /\(/ { start = prevno; name = prev; inside = 1; next }
		inside && /^\}/ {
			n = NR - start + 1
			if (n > max) { sub(/\(.*/, "", name); printf "%s:%d: %s is %d lines\n", file, start, name, n }
			inside = 0
		}
		!inside && NF { prev = $0; prevno = NR }
	' "$f")
	if [ -n "$out" ]; then
		echo "$out"
		bad=1
	fi
done < <(find user bpf -name '*.c' -o -name '*.h' | sort)
if [ $bad -ne 0 ]; then
	echo "func_length: functions above over $max lines; split them along their seams" >&2
	exit 1
fi
echo "func_length: no function in user/ or bpf/ over $max lines"
