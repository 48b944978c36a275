-- Many sleeps of 1 s at once, as tasks or as plain blocks: prints how many have finished when
-- all are done or when the budget is up, whichever comes first, then ends the process (plain
-- blocks would otherwise keep it for minutes: each holds a thread, and Dispatch's pool grows
-- by about one thread per second).
-- usage: luadispatch run tasks_sleep.lua tasks|blocks [count [budget_seconds]]
local dispatch = require("dispatch")
local args = {...}
local mode = args[1] or "tasks"
local n = math.tointeger(tonumber(args[2] or "")) or 10000
local budget = tonumber(args[3] or "") or 1.5
assert(mode == "tasks" or mode == "blocks", "mode: tasks or blocks")

local done, t0 = 0, dispatch.now()
local counter = dispatch.queue("done")   -- the sleepers end at the same time: counted one at a time
local function report()
  local count = counter:sync(function() return done end)
  print(string.format("%s: %d of %d sleeps done in %.3f s", mode, count, n, dispatch.now() - t0))
  dispatch.exit(0)
end
local function count()
  done = done + 1
  if done == n then dispatch.main:async(report) end
end
local function sleeper()
  dispatch.sleep(1)
  counter:async(count)
end
for i = 1, n do
  if mode == "tasks" then dispatch.task(sleeper) else dispatch.global():async(sleeper) end
end
dispatch.main:after(t0 + budget, report)
