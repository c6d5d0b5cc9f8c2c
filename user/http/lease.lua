local n = redis.call('ZREM', KEYS[1], ARGV[1])
if n == 0 or not KEYS[2] then return { n, 0 } end
local inc = tonumber(ARGV[4])
if not inc or inc <= 0 then return { n, 0 } end
local function split(v)
  local d = string.find(v, '.', 1, true)
  if not d then return tonumber(v) or 0, 0, true end
  return tonumber(string.sub(v, 1, d - 1)) or 0, tonumber(string.sub(v, d)) or 0
end
local ni, nf = split(ARGV[2])
local tau = tonumber(ARGV[3])
local v = redis.pcall('GET', KEYS[2])
if type(v) == 'table' then return { n, 0 } end
local r = 0
if v then
  local ti, tf, old = split(v)
  if old then ti = ti - 1704067200000000 end
  r = (ti - ni) + (tf - nf)
end
if r < 0 then r = 0 end
r = r + inc
if r > tau then r = tau end
local x = nf + r
local xi = math.floor(x)
local f = math.floor((x - xi) * 1000 + 0.5)
if f >= 1000 then xi = xi + 1; f = f - 1000 end
redis.call('SET', KEYS[2], string.format('%.0f.%03d', ni + xi, f), 'PX', math.ceil(r / 1000) + 1)
return { n, 1 }
