-- What a task's step costs, against a plain q:async round trip, measured in one run:
--   signalled: a task waits on a semaphore signalled just before (the wait is over at once,
--              so the task is not suspended);
--   suspended: a task suspends and resumes (dispatch.sleep(0): the step ends, a block
--              resumes the task on its queue: two Dispatch hops);
--   chain:     a plain block submits the next plain block to its own queue with q:async
--              (one hop: what a step costs without the coroutine);
--   ping-pong: a block on one queue submits a block to another, which submits the next
--              block back (two hops, each to a thread that may be asleep).
-- Prints nanoseconds per iteration of each.
-- usage: luadispatch run task_step.lua [iterations]
local dispatch = require("dispatch")
local n = math.tointeger(tonumber((...) or "")) or 1000000
local q, other = dispatch.queue("step.home"), dispatch.queue("step.other")

local function perIteration(t0) return (dispatch.now() - t0) / n * 1e9 end

local s = dispatch.semaphore(0)
local t0 = dispatch.now()
dispatch.task(function() for i = 1, n do s:signal(); s:wait() end end, q):wait()
local signalled = perIteration(t0)

t0 = dispatch.now()
dispatch.task(function() for i = 1, n do dispatch.sleep(0) end end, q):wait()
local suspended = perIteration(t0)

local finished, i = dispatch.semaphore(0), 0
local function link()
  i = i + 1
  if i > n then finished:signal() else q:async(link) end
end
t0 = dispatch.now()
q:async(link)
finished:wait()
local chain = perIteration(t0)

i = 0
local function ping()
  i = i + 1
  if i > n then finished:signal() else other:async(function() q:async(ping) end) end
end
t0 = dispatch.now()
q:async(ping)
finished:wait()
local pingPong = perIteration(t0)

print(string.format("signalled %.1f ns, suspended %.1f ns, chain %.1f ns, ping-pong %.1f ns (%d iterations)",
  signalled, suspended, chain, pingPong, n))
