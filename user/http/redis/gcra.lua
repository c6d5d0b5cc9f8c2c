-- gcra.lua - the identity tier's decisions in Redis: rate (GCRA) and
-- concurrency (lease sets) over the buckets of a batch, all admit or none is
-- charged; releases and post-paid charges. The arguments: script.c.
local function split(v)
  local d = string.find(v, '.', 1, true)
  if not d then return tonumber(v) or 0, 0, true end
  return tonumber(string.sub(v, 1, d - 1)) or 0, tonumber(string.sub(v, d)) or 0
end
local ni, nf = split(ARGV[1])
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
local nd = tonumber(ARGV[2])
local nk, nc, relk, rk, k0 = {}, {}, {}, {}, 0
for d = 1, nd do
  local r, a, b = string.match(ARGV[2 + d], '^(r?)(%d+)/?(%d*)$')
  if r == 'r' then
    relk[d] = tonumber(a) or 0
    nk[d] = 0
    nc[d] = 2 * relk[d]
  else
    nk[d] = tonumber(a) or 0
    nc[d] = tonumber(b) or 0
    for i = 1, nk[d] do rk[#rk + 1] = KEYS[k0 + i] end
  end
  k0 = k0 + nk[d] + nc[d]
end
local val, bad = {}, {}
if #rk == 1 then
  local v = redis.pcall('GET', rk[1])
  if type(v) == 'table' and v.err then bad[rk[1]] = true else val[rk[1]] = v end
elseif #rk > 1 then
  local v, miss = redis.call('MGET', unpack(rk)), {}
  for k = 1, #rk do
    if v[k] then val[rk[k]] = v[k] else miss[#miss + 1] = rk[k] end
  end
  local left = #miss > 0 and redis.call('EXISTS', unpack(miss)) or 0
  for k = 1, #miss do
    if left == 0 then break end
    if redis.call('TYPE', miss[k]).ok ~= 'none' then bad[miss[k]] = true; left = left - 1 end
  end
end
local num = {}
local function arg(a)
  local x = num[a]
  if not x then x = tonumber(a); num[a] = x end
  return x
end
local out = {}
local function release(k, kb, ab)
  out[#out + 1] = 0
  for i = 1, k do
    local ck, bk, a = KEYS[kb + 2*i - 1], KEYS[kb + 2*i], ab + 3*i
    local x = redis.pcall('ZREM', ck, ARGV[a - 2])
    local gone, tau, inc = type(x) == 'number' and x > 0, arg(ARGV[a - 1]), arg(ARGV[a])
    out[#out + 1] = gone and 'A' or 'R'
    out[#out + 1] = '0'
    local v = val[bk]
    if gone and inc > 0 and not v then
      v = redis.pcall('GET', bk)
      if type(v) == 'table' then gone = false end
    end
    if gone and inc > 0 then
      local r = ahead(v)
      if r < 0 then r = 0 end
      r = r + inc
      if r > tau then r = tau end
      val[bk] = abs(r)
      redis.call('SET', bk, val[bk], 'PX', math.ceil(r / 1000) + 1)
      out[#out + 1] = 'A'
      out[#out + 1] = string.format('%.3f', r)
    else
      out[#out + 1] = 'R'
      out[#out + 1] = '0'
    end
  end
end
local rel, new, ok, fix = {}, {}, {}, {}
local k0, a0 = 0, nd + 2
local held, first, room = {}, {}, {}
for d = 1, nd do
  local n, c = nk[d], nc[d]
  local refused, err = 0, false
  if relk[d] then
    release(relk[d], k0, a0)
    c = 0
  end
  for i = 1, c do
    local key, lim = KEYS[k0 + n + i], arg(ARGV[a0 + 2*n + 3*i - 2])
    local x = redis.pcall('ZREMRANGEBYSCORE', key, '-inf', ni)
    if type(x) == 'table' and x.err then
      err = true; held[i] = 0; first[i] = 0; room[i] = false
    else
      held[i] = redis.call('ZCARD', key)
      local f = held[i] > 0 and redis.call('ZRANGE', key, 0, 0, 'WITHSCORES') or {}
      first[i] = f[2] and (tonumber(f[2]) - ni - nf) or 0
      room[i] = held[i] < math.abs(lim)
      if not room[i] and lim > 0 then refused = 1 end
    end
  end
  for i = 1, n do
    local key = KEYS[k0 + i]
    local tau = arg(ARGV[a0 + 2*i - 1])
    local inc = arg(ARGV[a0 + 2*i])
    local shadow, post = tau < 0, inc < 0
    if shadow then tau = -tau end
    if post then inc = -inc end
    local v = val[key]
    if bad[key] then err = true end
    local r = ahead(v)
    fix[i] = r > tau + 0.0005
    if fix[i] then r = tau end
    rel[i] = r
    if r < 0 then r = 0 end
    new[i] = r + inc
    if post and new[i] > tau then new[i] = tau end
    ok[i] = new[i] <= tau + 0.0005
    if not ok[i] and not shadow then refused = 1 end
  end
  if not relk[d] then out[#out + 1] = err and 2 or refused end
  for i = 1, n do
    local r, key = rel[i], KEYS[k0 + i]
    if err then
      out[#out + 1] = 'E'
      out[#out + 1] = '0'
    elseif refused == 0 and ok[i] then
      val[key] = abs(new[i])
      redis.call('SET', key, val[key], 'PX', math.ceil(new[i] / 1000) + 1)
      out[#out + 1] = 'A'
      out[#out + 1] = string.format('%.3f', new[i])
    else
      if fix[i] then
        val[key] = abs(r)
        redis.call('SET', key, val[key], 'PX', math.ceil(r / 1000) + 1)
      elseif r > 0 then redis.call('PEXPIRE', key, math.ceil(r / 1000) + 1) end
      out[#out + 1] = ok[i] and 'a' or 'R'
      out[#out + 1] = r > 0 and string.format('%.3f', r) or '0'
    end
  end
  for i = 1, c do
    local key, a = KEYS[k0 + n + i], a0 + 2*n + 3*i
    local f = 'R'
    if err then f = 'E'
    elseif refused == 0 and room[i] then
      local ttl = arg(ARGV[a - 1])
      redis.call('ZADD', key, ni + ttl, ARGV[a])
      redis.call('PEXPIRE', key, math.ceil(ttl / 1000) + 1)
      f = 'A'
    elseif room[i] then f = 'a' end
    out[#out + 1] = f .. held[i]
    out[#out + 1] = first[i] > 0 and string.format('%.3f', first[i]) or '0'
  end
  k0 = k0 + nk[d] + nc[d]
  a0 = a0 + 2 * nk[d] + 3 * (relk[d] and relk[d] or nc[d])
end
return out
