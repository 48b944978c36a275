-- title: Suspending and resuming a queue
-- seed: 003 (Suspending and resuming queues)
-- expect: 4 checks, 2 s of delays, 0.5 s of work
--
-- Apple's dispatch queue guide: dispatch_suspend increments the queue's
-- suspension count and dispatch_resume decrements it; while the count is
-- above zero the queue starts no block. Suspension takes effect between
-- blocks: a block that is already running is not stopped.

local dispatch = require("dispatch")
local scenario = require("scenario")

local queue = dispatch.queue("com.example.SuspendableQueue")
-- The queue's blocks and the script run at the same time: they log on a serial queue, one
-- event at a time.
local events, log = {}, dispatch.queue("log")
local function event(e)
  log:sync(function()
    events[#events + 1] = e
    print(e)
  end)
end
local function eventsSoFar() return log:sync(function() return { table.unpack(events) } end) end

-- Block 1 is running when the queue gets suspended.
local started = dispatch.semaphore(0)
queue:async(function()
  event("block 1 starts")
  started:signal()
  dispatch.sleep(scenario.delay(0.5))
  event("block 1 ends (suspending did not stop it)")
end)
started:wait()

queue:suspend()                     -- count 1
queue:suspend()                     -- count 2: needs two resumes
event("queue suspended twice while block 1 runs")
local held = dispatch.semaphore(0)   -- signalled by each held block when it runs
for i = 2, 4 do
  queue:async(function() event("block " .. i .. " runs"); held:signal() end)
end

dispatch.sleep(scenario.delay(1.5))
local sofar = eventsSoFar()
event("after a pause: nothing new ran")
scenario.check(sofar[#sofar] == "block 1 ends (suspending did not stop it)",
  "the running block finishes although the queue was suspended")

queue:resume()                      -- count 1: still suspended
event("resumed once (count 1)")
-- Half a second whatever the delay scale: a queue that did run again would start block 2 well
-- within it, even on a busy machine.
local ranWhileSuspended = held:wait(math.max(scenario.delay(0.5), 0.5))
scenario.check(not ranWhileSuspended, "nothing runs while the queue is suspended")

queue:resume()                      -- count 0: runs again
event("resumed twice (count 0)")
queue:sync(function() end)          -- FIFO: after blocks 2-4

local tail, all = {}, eventsSoFar()
for i = #all - 2, #all do tail[#tail + 1] = all[i] end
scenario.check(table.concat(tail, "|") == "block 2 runs|block 3 runs|block 4 runs",
  "the held blocks run, in order, only after the last resume")

-- One resume too many is an error, not a crash.
local ok, err = pcall(function() queue:resume() end)
print("an extra resume: " .. (ok and "accepted?!" or ("error: " .. tostring(err))))
scenario.check(not ok, "resuming a queue that is not suspended raises an error")
