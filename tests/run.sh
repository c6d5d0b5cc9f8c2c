#!/usr/bin/env bash
# Run every test: userspace units (cmocka), the XDP program under
# BPF_PROG_TEST_RUN, end-to-end tests on veth pairs in network namespaces,
# the libFuzzer harnesses for FUZZ_SECS seconds each (tests/fuzz/run.sh), and
# the unit tests and a few HTTP end-to-end tests again with the ASan+UBSan
# build ($BUILD/asan, `make asan-build`). A test exits 0 (pass), 77 (skip:
# needs root/XDP) or anything else (fail). Under CI=true a skip is a failure:
# CI runs as root with XDP.
# Usage: tests/run.sh [lint|unit|bpf|e2e|fuzz|asan|tsan]...
set -uo pipefail
cd "$(dirname "$0")/.."

B=${BUILD:-build}
groups=("$@")
[ ${#groups[@]} -eq 0 ] && groups=(lint unit bpf e2e fuzz asan tsan)
UNITS=(test_gcra test_policy test_config test_limiter test_ctl test_verify test_http test_log test_redis_slots test_syncookie test_procstat test_peaks)
# The HTTP e2e tests run again on the sanitized xrld: hostile requests, the
# JSON API, the X-Forwarded-For walk (about a minute together).
ASAN_E2E=(test_http_malformed test_http_check_api test_http_client_ip test_http_reload_race test_http_concurrency
	test_http_concurrency_redis test_http_concurrency_cluster test_http_fleet test_http_fleet_cluster test_http_redis_cluster
	test_http_trust test_http_recommend)

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

# san_run CMD...: run it with sanitizer reports written under SAN_LOG, and
# fail when one was written, whatever CMD exited with (an xrld stopped by
# the test can still report at exit).
SAN_LOG=
san_run() {
	local rc f
	rm -f "$SAN_LOG"/*
	"$@"
	rc=$?
	for f in "$SAN_LOG"/*; do
		[ -e "$f" ] || continue
		echo "sanitizer report ${f##*/}:"
		head -n 80 "$f"
		rc=1
	done
	return $rc
}

for g in "${groups[@]}"; do
	case $g in
	lint)
		# checks on the tree itself (tests/lint/*.sh)
		for t in tests/lint/*.sh; do
			run "lint/$(basename "$t" .sh)" bash "$t"
		done
		;;
	unit)
		for t in "${UNITS[@]}"; do
			run "unit/$t" "$B/tests/$t"
		done
		# xrl-policy(5) names every key docs/policy.md does
		run "docs/check_policy_man" bash tests/check_policy_man.sh
		;;
	bpf)
		root_run bpf/test_bpf "$B/tests/test_bpf"
		root_run bpf/test_cookie "$B/tests/test_cookie"
		root_run bpf/xdp_fuzz "$B/tests/xdp_fuzz" --count 1000000
		;;
	e2e)
		for t in tests/e2e/test_*.sh; do
			[ -e "$t" ] || continue
			# a hung test fails after 15 min instead of taking the run
			root_run "e2e/$(basename "$t" .sh)" timeout --kill-after=10 900 bash "$t"
		done
		;;
	fuzz)
		for f in tests/fuzz/fuzz_*.c; do
			n=${f##*/fuzz_}
			n=${n%.c}
			# a fuzz_*.c without it (the packet fuzzer) is a program of its own
			grep -q LLVMFuzzerTestOneInput "$f" || continue
			run "fuzz/$n" env BUILD="$B" tests/fuzz/run.sh "$n"
		done
		;;
	asan)
		SAN_LOG=$(mktemp -d /tmp/xrl-san.XXXXXX) || exit 1
		export ASAN_OPTIONS="abort_on_error=1:halt_on_error=1:detect_leaks=1:log_path=$SAN_LOG/asan"
		export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$SAN_LOG/ubsan"
		for t in "${UNITS[@]}"; do
			run "asan/unit/$t" san_run "$B/asan/tests/$t"
		done
		for t in "${ASAN_E2E[@]}"; do
			root_run "asan/e2e/$t" san_run env XRLD="$B/asan/xrld" bash "tests/e2e/$t.sh"
		done
		rm -rf "$SAN_LOG"
		unset ASAN_OPTIONS UBSAN_OPTIONS
		;;
	tsan)
		# the limiter's threaded cases under ThreadSanitizer (make test-tsan)
		run tsan/limiter_concurrent env TSAN_OPTIONS='halt_on_error=1 second_deadlock_stack=1' \
			XRL_TEST_FILTER='*concurrent*' "$B/tsan/test_limiter"
		run tsan/limiter_two_instances env TSAN_OPTIONS='halt_on_error=1' \
			XRL_TEST_FILTER='*two_instances*' "$B/tsan/test_limiter"
		# reloads under scrapes (a use-after-free of the identity tier and
		# unsynchronised counters before)
		root_run tsan/e2e/test_http_reload_race env TSAN_OPTIONS='halt_on_error=1' \
			XRLD="$B/tsan-xrld/xrld" bash tests/e2e/test_http_reload_race.sh
		;;
	*)
		echo "tests/run.sh: unknown group '$g' (lint, unit, bpf, e2e, fuzz, asan, tsan)" >&2
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
