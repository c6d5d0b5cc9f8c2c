-- gcra_node.lua - one call for a Redis Cluster node's rate decisions of
-- several slots (cluster.c). The same decisions as gcra.lua for
-- rules with a rate; a call holding a concurrency part or a release is an
-- error (xrld sends those to gcra.lua, a call of one slot). Checked
-- against gcra.lua, answer for answer and value for value, by
-- tests/e2e/test_redis_node_script.sh.
-- KEYS[1]: one key, for Redis to route by (MOVED, ASK). ARGV[1]: the
-- number of keys N; ARGV[2..N+1]: the keys; then gcra.lua's ARGV: now,
-- the decisions' count, each decision's key count, two numbers a key.
-- A key of another slot is read with a GET of its own (a command may not
-- name two slots). Every key is read before anything is written, so a key
-- the node does not serve ("non local key") fails the call whole, and
-- xrld sends it again one slot a call; a call that is not all rate
-- decisions, or whose decisions' key counts do not add up to N, is
-- refused before anything is written too.
local A, R = ARGV, redis
local nk = tonumber(A[1])
local function split(v)
  local d = string.find(v, '.', 1, true)
  if not d then return tonumber(v) or 0, 0, true end
  return tonumber(string.sub(v, 1, d - 1)) or 0, tonumber(string.sub(v, d)) or 0
end
local ni, nf = split(A[nk + 2])
local function abs(r)
  local x = nf + r
  local xi = math.floor(x)
  local f = math.floor((x - xi) * 1000 + 0.5)
  if f >= 1000 then xi = xi + 1; f = f - 1000 end
  return string.format('%.0f.%03d', ni + xi, f)
end
local function ahead(v)
  if not v then return 0 end
  local ti, tf, old = split(v)
  if old then ti = ti - 1704067200000000 end
  local r = (ti - ni) + (tf - nf)
  if r ~= r then return math.huge end
  return r
end
local val, bad = {}, {}
for i = 2, nk + 1 do
  local k = A[i]
  if val[k] == nil then
    local v = R.pcall('GET', k)
    if type(v) == 'table' then
      if string.find(v.err, 'non local', 1, true) then return R.call('GET', k) end
      bad[k] = true
      v = false
    end
    val[k] = v
  end
end
local nd, ns, sum = tonumber(A[nk + 3]), {}, 0
for d = 1, nd do
  ns[d] = tonumber(string.match(A[nk + 3 + d], '^(%d+)/?0?$') or '')
  if not ns[d] then return R.error_reply('ERR xrl node script: rate decisions only') end
  sum = sum + ns[d]
end
if sum ~= nk then return R.error_reply('ERR xrl node script: the decisions name other than the keys') end
local out, new, ok, rel, fix = {}, {}, {}, {}, {}
local k0, a0 = 1, nk + 3 + nd
for d = 1, nd do
  local n = ns[d]
  local refused, err = 0, false
  for i = 1, n do
    local key = A[k0 + i]
    local tau, inc = tonumber(A[a0 + 2*i - 1]), tonumber(A[a0 + 2*i])
    local shadow, post = tau < 0, inc < 0
    if shadow then tau = -tau end
    if post then inc = -inc end
    if bad[key] then err = true end
    local r = ahead(val[key])
    fix[i] = r > tau + 0.0005
    if fix[i] then r = tau end
    rel[i] = r
    if r < 0 then r = 0 end
    new[i] = r + inc
    if post and new[i] > tau then new[i] = tau end
    ok[i] = new[i] <= tau + 0.0005
    if not ok[i] and not shadow then refused = 1 end
  end
  out[#out + 1] = err and 2 or refused
  for i = 1, n do
    local r, key = rel[i], A[k0 + i]
    if err then
      out[#out + 1] = 'E'
      out[#out + 1] = '0'
    elseif refused == 0 and ok[i] then
      val[key] = abs(new[i])
      R.call('SET', key, val[key], 'PX', math.ceil(new[i] / 1000) + 1)
      out[#out + 1] = 'A'
      out[#out + 1] = string.format('%.3f', new[i])
    else
      if fix[i] then
        val[key] = abs(r)
        R.call('SET', key, val[key], 'PX', math.ceil(r / 1000) + 1)
      elseif r > 0 then R.call('PEXPIRE', key, math.ceil(r / 1000) + 1) end
      out[#out + 1] = ok[i] and 'a' or 'R'
      out[#out + 1] = r > 0 and string.format('%.3f', r) or '0'
    end
  end
  k0 = k0 + n
  a0 = a0 + 2 * n
end
return out
