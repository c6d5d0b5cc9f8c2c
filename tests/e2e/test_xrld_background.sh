#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_xrld_background.sh - xrld without --foreground goes to the background
# before it starts any thread: the identity tier and the metrics server run
# in the daemon, not in the parent that exited (they used to start before
# daemon(), and a thread does not survive a fork: the daemon answered its
# socket but no HTTP request).
#
#   1. xrld (no --foreground) returns at once with status 0
#   2. its socket answers; /v1/check answers 200; /metrics answers
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_xrld_background
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

require_http
http_setup
P=$(free_port)
M=$(free_port)
cat >"$HT_TMP/x.yaml" <<YAML
metrics: 127.0.0.1:$M
$(http_yaml "$P")
  rules:
$(yaml_rule api '{ path_prefix: /api/ }' header:X-User-Id 10/s 10)
YAML
PIN=/sys/fs/bpf/xrl-http-$$-bg
HT_PINS+=("$PIN")
timeout 10 "$XRLD" --config "$HT_TMP/x.yaml" --socket "$HT_TMP/x.sock" --pin-dir "$PIN"
check_eq "xrld (no --foreground) returned" "$?" 0
pid=
for _ in $(seq 50); do
	pid=$("$XRL_ROOT/build/xrlctl" --socket "$HT_TMP/x.sock" --json status 2>/dev/null |
		jget "d['daemon']['pid']")
	[[ "$pid" =~ ^[0-9]+$ ]] && break
	sleep 0.1
done
[[ "$pid" =~ ^[0-9]+$ ]] && HT_PIDS+=("$pid")
check_match "the daemon answers on its socket" "$pid" '^[0-9]+$'
code=$(curl -s -o /dev/null -w '%{http_code}' -m 2 -X POST -H 'Content-Type: application/json' \
	--data-binary '{"rule":"api","key":"u1","cost":1}' "http://127.0.0.1:$P/v1/check")
check_eq "the identity tier answers in the daemon" "$code" 200
code=$(curl -s -o /dev/null -w '%{http_code}' -m 2 "http://127.0.0.1:$M/metrics")
check_eq "metrics answer in the daemon" "$code" 200
finish
