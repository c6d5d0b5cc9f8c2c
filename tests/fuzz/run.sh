#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# tests/fuzz/run.sh [NAME...] - run libFuzzer harnesses for a bounded time.
#
# Each harness $BUILD/fuzz/fuzz_NAME (built by `make fuzz-build` from
# tests/fuzz/fuzz_NAME.c) runs FUZZ_SECS seconds (default 20; `make fuzz`
# uses 600) over its seed corpus tests/fuzz/corpus/NAME/, which is only
# read: what a run finds goes to a temporary directory. Without NAMEs, every
# harness built runs, one after the other.
#
# Any crash, sanitizer report, leak, input slower than FUZZ_TIMEOUT seconds
# (default 2: a quadratic parser is a bug here; every seed and every input
# found so far runs in under 2 ms, and a starved machine has paused a run
# for over 1 s) or over FUZZ_RSS_MB MiB
# (default 2048) fails the run; the input is kept under
# $BUILD/fuzz/artifacts/NAME/ and its reproduction command printed.
# Optional per harness: tests/fuzz/NAME.options (more libFuzzer flags, one
# line) and tests/fuzz/NAME.dict (a libFuzzer dictionary).
#
# Exit: 0 all passed, 1 a harness failed, 2 usage or a missing harness.
set -uo pipefail
cd "$(dirname "$0")/../.."

B=${BUILD:-build}
SECS=${FUZZ_SECS:-20}
TMO=${FUZZ_TIMEOUT:-2}
RSS=${FUZZ_RSS_MB:-2048}

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	for f in "$B"/fuzz/fuzz_*; do
		[ -f "$f" ] && [ -x "$f" ] || continue
		names+=("${f##*/fuzz_}")
	done
fi
if [ ${#names[@]} -eq 0 ]; then
	echo "fuzz: no harness under $B/fuzz/: make fuzz-build" >&2
	exit 2
fi

# one NAME: 0 pass, 1 fail, 2 missing
fuzz_one() {
	local n=$1 bin=$B/fuzz/fuzz_$1 corpus=tests/fuzz/corpus/$1 art=$B/fuzz/artifacts/$1
	local work log rc opts=() stats cov unit
	if [ ! -x "$bin" ]; then
		echo "fuzz $n: $bin is missing: make fuzz-build" >&2
		return 2
	fi
	[ -d "$corpus" ] || { echo "fuzz $n: no seed corpus $corpus" >&2; return 2; }
	mkdir -p "$art"
	work=$(mktemp -d "/tmp/xrl-fuzz-$n.XXXXXX") || return 1
	log=$work.log
	# shellcheck disable=SC2207 # one line of flags, split on spaces
	[ -f "tests/fuzz/$n.options" ] && opts+=($(grep -v '^#' "tests/fuzz/$n.options"))
	[ -f "tests/fuzz/$n.dict" ] && opts+=("-dict=tests/fuzz/$n.dict")
	# exit codes: libFuzzer's own (77 on a crash) would read as "skip"
	"$bin" -max_total_time="$SECS" -timeout="$TMO" -rss_limit_mb="$RSS" \
		-malloc_limit_mb="$RSS" -error_exitcode=1 -timeout_exitcode=1 \
		-artifact_prefix="$art/" -print_final_stats=1 "${opts[@]}" \
		"$work" "$corpus" >"$log" 2>&1
	rc=$?
	stats=$(grep -E '^stat::(number_of_executed_units|new_units_added|peak_rss_mb)' "$log" |
		sed 's/^stat:://; s/: */=/' | tr '\n' ' ')
	cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -n 1)
	if [ $rc -eq 0 ]; then
		echo "fuzz $n: ok, ${SECS}s, $cov, $stats"
	else
		echo "fuzz $n: FAILED (exit $rc) after $stats"
		grep -E 'ERROR|SUMMARY|Test unit written|timeout|leak|out-of-memory' "$log" | head -n 20 | sed 's/^/    /'
		unit=$(grep -o 'Test unit written to .*' "$log" | tail -n 1 | sed 's/^Test unit written to //')
		echo "    reproduce: $bin ${unit:-$art/<crash|timeout|leak|oom>-<sha1>}"
		echo "    log (last 40 lines):"
		tail -n 40 "$log" | sed 's/^/    /'
		rc=1
	fi
	rm -rf "$work" "$log"
	return $rc
}

fail=0
for n in "${names[@]}"; do
	fuzz_one "$n"
	rc=$?
	[ $rc -eq 2 ] && exit 2
	[ $rc -ne 0 ] && fail=1
done
exit $fail
