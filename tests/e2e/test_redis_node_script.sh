#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# tests/e2e/test_redis_node_script.sh - the cluster node script
# (user/http/redis/gcra_node.lua) decides as gcra.lua does: a standalone
# redis-server runs gcra.lua and a cluster-enabled one (every slot but
# 16000-16383, full coverage not required) runs gcra_node.lua, and
# node_script_diff.py sends both the same 3,000 random calls, as xrld
# would, comparing every answer and every key's value after (repeated
# keys, shadow rules, refusals, costs over tau, cost 0, values ahead of
# tau, the old value format, a key of another type, a clock going back).
# Then: a key of a slot the node does not serve fails the call whole
# ("non local key", which xrld answers by sending the call again one slot
# a call) before anything is written; a concurrency part or a release is
# refused, also before anything is written.
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_redis_node_script
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

require_http redis-server redis-cli
http_setup

redis_start one
# one cluster node, slots 0-15999: 16000-16383 are nobody's
p=$(free_port)
mkdir -p "$HT_TMP/node"
HT_LOG[node]=$HT_TMP/node.log
redis-server --port "$p" --bind 127.0.0.1 --save "" --appendonly no --dir "$HT_TMP/node" \
	--cluster-enabled yes --cluster-port "$(free_port)" --cluster-config-file nodes.conf \
	--cluster-require-full-coverage no --daemonize no >>"${HT_LOG[node]}" 2>&1 &
HT_PID[node]=$!
HT_PORT[node]=$p
HT_PIDS+=("$!")
wait_for 10 redis_ping node || fatal "the cluster node did not answer on $p"
check_eq "slots 0-15999 assigned" OK "$(redis-cli -p "$p" CLUSTER ADDSLOTSRANGE 0 15999)"
wait_for 10 sh -c "redis-cli -p $p CLUSTER INFO | grep -q '^cluster_state:ok'" ||
	fatal "the cluster node did not reach cluster_state:ok"

log "3,000 random calls to gcra.lua (standalone) and gcra_node.lua (cluster node)"
out=$("$XRL_PY" "$XRL_ROOT/tests/e2e/node_script_diff.py" "${HT_PORT[one]}" "$p" \
	"$XRL_ROOT/user/http/redis/gcra.lua" "$XRL_ROOT/user/http/redis/gcra_node.lua" 3000 "${SEED:-$RANDOM}" 2>&1)
rc=$?
printf '%s\n' "$out" | tail -n 20 | sed 's/^/    /'
check_eq "node_script_diff.py exit status (0: every answer and value agrees)" "$rc" 0
check_eq "the calls ran" "$(grep -c '^3000 rounds: all answers and values agree' <<<"$out")" 1

finish
