-- SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
--
-- scripts/bench/http/auth.lua - the wrk script of scripts/bench/http.sh.
--
--   wrk ... -s auth.lua URL -- PATH FORWARDED_URI NKEYS
--
-- Every request carries the same three headers whichever server is asked,
-- so xrld and nginx parse the same bytes:
--   X-Forwarded-Method: GET, X-Forwarded-Uri: FORWARDED_URI (what xrld's
--   /v1/auth matches its rules against; nginx routes on PATH instead) and
--   X-User-Id: u1..uNKEYS, in turn (the key of both limiters).
-- The NKEYS requests are formatted once, in init() (wrklib.lua's
-- requests): wrk's own cost per request stays a table lookup.
--
-- done() prints one machine-readable line for http.sh:
--   RESULT requests=N duration_us=N p50_us=N p99_us=N non2xx=N sockerr=N

local wrklib = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "wrklib.lua")
local reqs, i = {}, 0

function init(args)
	reqs = wrklib.requests(args[1], args[2], tonumber(args[3] or "1024"))
end

function request()
	i = i % #reqs + 1
	return reqs[i]
end

function done(summary, latency, requests)
	wrklib.result(summary, latency)
end
