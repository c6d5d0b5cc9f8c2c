#!/usr/bin/env bash
# Run every test: userspace units (cmocka), the XDP program under
# BPF_PROG_TEST_RUN, and end-to-end tests on veth pairs in network
# namespaces. A test exits 0 (pass), 77 (skip: needs root/XDP) or anything
# else (fail). Under CI=true a skip is a failure: CI runs as root with XDP.
# Usage: tests/run.sh [unit|bpf|e2e]...
set -uo pipefail
cd "$(dirname "$0")/.."

B=${BUILD:-build}
groups=("$@")
[ ${#groups[@]} -eq 0 ] && groups=(unit bpf e2e)

pass=0 fail=0 skip=0
failed=()

need_root() {
	[ "$(id -u)" -eq 0 ] || return 77
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf || return 77
	return 0
}

run() {
	local name=$1; shift
	local rc
	printf '=== %s\n' "$name"
	"$@"
	rc=$?
	if [ $rc -eq 77 ] && [ "${CI:-}" = "true" ]; then
		echo "--- $name: skipped, which is a failure under CI=true"
		rc=1
	fi
	case $rc in
	0) pass=$((pass + 1)); echo "--- PASS $name" ;;
	77) skip=$((skip + 1)); echo "--- SKIP $name" ;;
	*) fail=$((fail + 1)); failed+=("$name"); echo "--- FAIL $name (exit $rc)" ;;
	esac
}

root_run() {
	local name=$1; shift
	if ! need_root; then
		run "$name" sh -c 'echo "needs root and bpffs"; exit 77'
		return
	fi
	run "$name" "$@"
}

for g in "${groups[@]}"; do
	case $g in
	unit)
		run unit/test_gcra "$B/tests/test_gcra"
		run unit/test_policy "$B/tests/test_policy"
		run unit/test_config "$B/tests/test_config"
		run unit/test_limiter "$B/tests/test_limiter"
		run unit/test_http "$B/tests/test_http"
		;;
	bpf)
		root_run bpf/test_bpf "$B/tests/test_bpf"
		;;
	e2e)
		for t in tests/e2e/test_*.sh; do
			[ -e "$t" ] || continue
			root_run "e2e/$(basename "$t" .sh)" bash "$t"
		done
		;;
	*)
		echo "tests/run.sh: unknown group '$g' (unit, bpf, e2e)" >&2
		exit 2
		;;
	esac
done

echo
[ ${#failed[@]} -gt 0 ] && printf 'failed: %s\n' "${failed[*]}"
if [ $skip -gt 0 ]; then
	echo "tests: $pass passed, $fail failed, $skip skipped"
else
	echo "tests: $pass passed, $fail failed"
fi
[ $fail -eq 0 ]
