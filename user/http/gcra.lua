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
local val, bad = {}, {}
if #KEYS == 1 then
  local v = redis.pcall('GET', KEYS[1])
  if type(v) == 'table' and v.err then bad[KEYS[1]] = true else val[KEYS[1]] = v end
else
  local v, miss = redis.call('MGET', unpack(KEYS)), {}
  for k = 1, #KEYS do
    if v[k] then val[KEYS[k]] = v[k] else miss[#miss + 1] = KEYS[k] end
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
local nd = tonumber(ARGV[2])
local out = {}
local rel, new, ok, fix = {}, {}, {}, {}
local k0, a0 = 0, nd + 2
for d = 1, nd do
  local n = tonumber(ARGV[2 + d])
  local refused, err = 0, false
  for i = 1, n do
    local key = KEYS[k0 + i]
    local tau = arg(ARGV[a0 + 2*i - 1])
    local inc = arg(ARGV[a0 + 2*i])
    local shadow = tau < 0
    if shadow then tau = -tau end
    local v = val[key]
    if bad[key] then err = true end
    local r = 0
    if v then
      local ti, tf, old = split(v)
      if old then ti = ti - 1704067200000000 end
      r = (ti - ni) + (tf - nf)
    end
    fix[i] = r > tau + 0.0005
    if fix[i] then r = tau end
    rel[i] = r
    if r < 0 then r = 0 end
    new[i] = r + inc
    ok[i] = new[i] <= tau + 0.0005
    if not ok[i] and not shadow then refused = 1 end
  end
  out[#out + 1] = err and 2 or refused
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
  k0 = k0 + n
  a0 = a0 + 2 * n
end
return out
