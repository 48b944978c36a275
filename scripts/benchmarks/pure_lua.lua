-- A CPU-bound pure-Lua script, no dispatch calls: recursion, arithmetic, tables and strings.
-- The benchmark times it under `luadispatch` and under stock `lua5.4`, in turn.
-- usage: luadispatch pure_lua.lua [scale]      (lua5.4 pure_lua.lua [scale])
local scale = tonumber((...) or "") or 1

local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end

local function sieve(n)
  local composite, count = {}, 0
  for i = 2, n do
    if not composite[i] then
      count = count + 1
      for j = i * i, n, i do composite[j] = true end
    end
  end
  return count
end

local function words(n)
  local counts, parts = {}, {}
  for i = 1, n do parts[#parts + 1] = ("w" .. i % 97) end
  for w in table.concat(parts, " "):gmatch("%S+") do counts[w] = (counts[w] or 0) + 1 end
  return counts.w0
end

local sum = 0
for _ = 1, math.max(1, math.floor(20 * scale)) do
  sum = sum + fib(24) + sieve(300000) + words(60000)
end
print(sum)
