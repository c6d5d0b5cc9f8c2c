-- SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
--
-- scripts/bench/http/wrklib.lua - what the wrk scripts of scripts/bench/http.sh
-- (auth.lua, lease.lua) share; each loads it from its own folder:
--
--   dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "wrklib.lua")

local M = {}

-- M.requests(PATH, URI, NKEYS): NKEYS GET requests of PATH, formatted once
-- (wrk's own cost per request stays a table lookup), the same three headers
-- whichever server is asked: X-Forwarded-Method: GET, X-Forwarded-Uri: URI
-- and X-User-Id: u1..uNKEYS, in turn.
function M.requests(path, uri, nkeys)
	local reqs = {}
	for k = 1, nkeys do
		reqs[k] = wrk.format("GET", path, {
			["X-Forwarded-Method"] = "GET",
			["X-Forwarded-Uri"] = uri,
			["X-User-Id"] = "u" .. k,
		})
	end
	return reqs
end

-- M.result(SUMMARY, LATENCY[, MORE]): done()'s machine-readable line for
-- http.sh, MORE (" acquires=N releases=N") at its end:
--   RESULT requests=N duration_us=N p50_us=N p99_us=N non2xx=N sockerr=N
function M.result(summary, latency, more)
	local e = summary.errors
	io.write(string.format(
		"RESULT requests=%d duration_us=%d p50_us=%d p99_us=%d non2xx=%d sockerr=%d%s\n",
		summary.requests, summary.duration, latency:percentile(50),
		latency:percentile(99), e.status, e.connect + e.read + e.write + e.timeout, more or ""))
end

return M
