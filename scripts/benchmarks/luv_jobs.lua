-- The baseline of workers.lua's `jobs` mode: N small jobs (x * 2) on luv's thread pool with
-- uv.new_work, each result back in the loop's callback, under stock lua5.4 (Debian's lua-luv).
-- Prints jobs/s.
--   lua5.4 luv_jobs.lua N
local uv = require("luv")
local n = math.tointeger(tonumber(arg[1] or "")) or 100000
local done, sum = 0, 0
local t0
local work = uv.new_work(function(x) return x * 2 end, function(r)
  sum = sum + r
  done = done + 1
end)
-- Warm the pool's threads and their Lua states, as workers.lua warms its workers.
local warm = uv.new_work(function() end, function() end)
for _ = 1, 8 do warm:queue() end
uv.run()
t0 = uv.hrtime()
for i = 1, n do work:queue(i) end
uv.run()
local t = (uv.hrtime() - t0) / 1e9
assert(done == n and sum == n * (n + 1), "lost results")
print(n / t)
