#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_cookie_sysctls.sh - end to end, on the kernel's cookie path (xdp.cookie_path:
# kernel; xrl's own cookies touch no sysctl): xrld sets up and tears down the
# sysctls SYN cookies need (net.ipv4.tcp_syncookies = 2, tcp_timestamps = 2,
# docs/design.md "SYN cookies") in the protected namespace, and puts back
# what was there before.
#
#   1. before: the namespace's own values (set here to 1 and 0, so that a
#      restore to the wrong value shows)
#   2. xrld starts with a `syn_cookies: on` rule: both are 2, and the log
#      says what changed
#   3. a policy without cookies: both back to 1 and 0
#   4. cookies again, then xrld stops without detaching (fail static): both
#      stay 2; a restarted xrld keeps them
#   5. `xrlctl detach`: back to 1 and 0, remembered across the restart
#      (the pinned xrl_sysctl map)
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_cookie_sysctls
# shellcheck source=tests/e2e/lib_xrld.sh
. "$(dirname "$0")/lib_xrld.sh"

require_xrld
xrld_lab cs$$

# sysctls: "tcp_syncookies tcp_timestamps" of the protected namespace.
sysctls() { echo "$(in_prot cat /proc/sys/net/ipv4/tcp_syncookies) $(in_prot cat /proc/sys/net/ipv4/tcp_timestamps)"; }

# cookie_config FILE on|off: write_config's policy, with syn_cookies, on
# the kernel's cookie path (xdp.cookie_path: kernel): this kernel has the
# kfunc of xrl's own cookies, which change no sysctl (test_syncookies.sh).
cookie_config() {
	write_config "$1" 100 100
	sed -i "s|      action: drop|      action: drop\n      syn_cookies: $2|; s|^xdp:|xdp:\n  cookie_path: kernel|" "$1"
}

log "1. before: the namespace's own values"
in_ns_sysctl "$LAB_PROT" net.ipv4.tcp_syncookies=1
in_ns_sysctl "$LAB_PROT" net.ipv4.tcp_timestamps=0
check_eq "1. before" "$(sysctls)" "1 0"

log "2. xrld with a syn_cookies: on rule"
cookie_config "$XRLD_CONF" on
xrld_start
check_eq "2. after xrld applied cookies" "$(sysctls)" "2 2"
check_match "2. the log says tcp_syncookies changed" "$(cat "$XRLD_LOG")" "tcp_syncookies 1 -> 2"
check_match "2. the log says tcp_timestamps changed" "$(cat "$XRLD_LOG")" "tcp_timestamps 0 -> 2"

log "3. a policy without cookies"
cookie_config "$LAB_TMP/off.yaml" off
ctl policy apply "$LAB_TMP/off.yaml" >/dev/null || fatal "policy apply (cookies off) failed"
check_eq "3. after a policy without cookies" "$(sysctls)" "1 0"
check_match "3. the log says they were restored" "$(cat "$XRLD_LOG")" "tcp_timestamps 2 -> 0, restored"

log "4. cookies again; xrld stops without detaching, then starts again"
ctl policy apply "$XRLD_CONF" >/dev/null || fatal "policy apply (cookies on) failed"
check_eq "4. cookies on again" "$(sysctls)" "2 2"
xrld_kill TERM
check_eq "4. xrld stopped (the program stays, fail static)" "$(sysctls)" "2 2"
xrld_start
check_eq "4. xrld restarted" "$(sysctls)" "2 2"

log "5. xrlctl detach"
ctl detach "$LAB_PROT_IF" >/dev/null || fatal "xrlctl detach failed"
check_eq "5. after detach: the values from before xrl" "$(sysctls)" "1 0"

finish
