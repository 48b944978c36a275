-- Queue and block costs, as a user measures them: this script run by the `luadispatch` CLI,
-- against the same program in Swift (Sources/luadispatch-native, built with -O). Prints one
-- figure per run, in the same unit as the native program's mode of the same name.
--   async_serial N          blocks/s: N q:async onto a serial queue, then one q:sync
--   async_concurrent N      blocks/s: the same onto a concurrent queue, then barrier_sync
--   sync_round_trip N       ns per q:sync of an empty function on an idle serial queue
--   perform_overhead N      ns per iteration of concurrent_perform with a trivial body
--   pending_block_memory N  resident pages grown by N blocks pending on a suspended queue, and N
-- usage: luadispatch run core.lua MODE N
--
-- The blocks of the concurrent modes share their counter without a serial queue, as the native
-- program's blocks share an atomic one, so that both measure the blocks alone; but blocks that run
-- at the same time may interleave at any instruction, and a switch inside `count = count + 1` loses
-- an increment. So those modes check only that no block ran twice; the barrier (or the return of
-- concurrent_perform) is what guarantees that every one ran.
local dispatch = require("dispatch")
local mode, n = ...
n = math.tointeger(tonumber(n or "")) or 1000000

local function residentPages()
  local f = assert(io.open("/proc/self/statm"))
  local _, resident = f:read("n", "n")
  f:close()
  return resident
end

if mode == "async_serial" then
  local q, count = dispatch.queue("bench.serial"), 0
  local t0 = dispatch.now()
  for _ = 1, n do q:async(function() count = count + 1 end) end
  q:sync(function() end)
  local t = dispatch.now() - t0
  assert(count == n)
  print(n / t)
elseif mode == "async_concurrent" then
  local q, count = dispatch.queue{label = "bench.concurrent", concurrent = true}, 0
  local t0 = dispatch.now()
  for _ = 1, n do q:async(function() count = count + 1 end) end
  q:barrier_sync(function() end)
  local t = dispatch.now() - t0
  assert(count <= n)
  print(n / t)
elseif mode == "sync_round_trip" then
  local q, count = dispatch.queue("bench.sync"), 0
  local f = function() count = count + 1 end
  local t0 = dispatch.now()
  for _ = 1, n do q:sync(f) end
  local t = dispatch.now() - t0
  assert(count == n)
  print(t / n * 1e9)
elseif mode == "perform_overhead" then
  local sum = 0
  local t0 = dispatch.now()
  dispatch.concurrent_perform(n, function(i) sum = sum + i end)
  local t = dispatch.now() - t0
  assert(sum <= n * (n + 1) // 2)
  print(t / n * 1e9)
elseif mode == "pending_block_memory" then
  local q, count = dispatch.queue("bench.pending"), 0
  q:suspend()
  collectgarbage(); collectgarbage()
  local before = residentPages()
  for _ = 1, n do q:async(function() count = count + 1 end) end
  collectgarbage(); collectgarbage()
  local grown = residentPages() - before
  q:resume()
  q:sync(function() end)
  assert(count == n)
  print(grown, n)
else
  error("usage: core.lua async_serial|async_concurrent|sync_round_trip|perform_overhead|pending_block_memory N")
end
