#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_cookie_fallback.sh - end to end, test_cookie_deploy.sh on the kernel's
# SYN-cookie path (`xdp: { cookie_path: kernel }`): the regression tests of
# its two guards, a primer SYN's checksum ((b): a bad-checksum flood while
# the application restarts) and new listeners primed within a second ((a)).
# The logic is all in test_cookie_deploy.sh (XRL_COOKIE_PATH=kernel).
#
# Takes about XRL_E2E_CSUM_SECS + 45 s (65 s by default).
# Knobs: XRL_E2E_CSUM_SECS (20 here, the bad-checksum flood of (b)).
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_COOKIE_PATH=kernel XRL_TEST_NAME=test_cookie_fallback XRL_E2E_CSUM_SECS=${XRL_E2E_CSUM_SECS:-20} \
	exec bash "$(dirname "$0")/test_cookie_deploy.sh" "$@"
