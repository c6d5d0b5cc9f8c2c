-- SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
--
-- scripts/bench/http/lease.lua - the wrk script of http.sh's concurrency
-- cases: acquire a slot, give it back.
--
--   wrk ... -s lease.lua URL -- FORWARDED_URI NKEYS
--
-- A request is either an acquire (GET /v1/auth, X-Forwarded-Uri
-- FORWARDED_URI, X-User-Id u1..uNKEYS in turn: a concurrency rule's key)
-- or, when an answer brought a lease id, its release (POST /v1/release,
-- X-XRL-Lease: ID). The leases of all connections of a thread form one
-- queue: each admitted acquire is followed by one release, on whichever
-- connection asks next.
--
-- done() prints one machine-readable line for http.sh:
--   RESULT requests=N duration_us=N p50_us=N p99_us=N non2xx=N sockerr=N acquires=N releases=N

local wrklib = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "wrklib.lua")
local acq, i, leases = {}, 0, {}
nacq, nrel = 0, 0 -- globals: done() reads them with thread:get
local threads = {}

function setup(thread)
	table.insert(threads, thread)
end

function init(args)
	acq = wrklib.requests("/v1/auth", args[1], tonumber(args[2] or "1024"))
end

function request()
	local id = table.remove(leases)
	if id then
		nrel = nrel + 1
		return wrk.format("POST", "/v1/release", { ["X-XRL-Lease"] = id })
	end
	nacq = nacq + 1
	i = i % #acq + 1
	return acq[i]
end

function response(status, headers, body)
	local id = headers["X-XRL-Lease"] or headers["x-xrl-lease"]
	if id then
		table.insert(leases, id)
	end
end

function done(summary, latency, requests)
	local a, r = 0, 0
	for _, t in ipairs(threads) do
		a = a + t:get("nacq")
		r = r + t:get("nrel")
	end
	wrklib.result(summary, latency, string.format(" acquires=%d releases=%d", a, r))
end
