-- title: Suspending and resuming a queue
-- seed: 003 (Suspending and resuming queues)
-- expect: 4 checks, 2.5 s of delays
--
-- Apple's dispatch queue guide: dispatch_suspend increments the queue's
-- suspension count and dispatch_resume decrements it; while the count is
-- above zero the queue starts no block. Suspension takes effect between
-- blocks: a block that is already running is not stopped.

local dispatch = require("dispatch")
local scenario = require("scenario")

local queue = dispatch.queue("com.example.SuspendableQueue")
local events = {}
local function event(e)
  events[#events + 1] = e
  print(e)
end

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
for i = 2, 4 do
  queue:async(function() event("block " .. i .. " runs") end)
end

dispatch.sleep(scenario.delay(1.5))
local n = #events
event("after a pause: nothing new ran")
scenario.check(events[n] == "block 1 ends (suspending did not stop it)",
  "the running block finishes although the queue was suspended")

queue:resume()                      -- count 1: still suspended
event("resumed once (count 1)")
dispatch.sleep(scenario.delay(0.5))
local ranWhileSuspended = false
for _, e in ipairs(events) do
  if e:match("^block [234]") then ranWhileSuspended = true end
end
scenario.check(not ranWhileSuspended, "nothing runs while the queue is suspended")

queue:resume()                      -- count 0: runs again
event("resumed twice (count 0)")
queue:sync(function() end)          -- FIFO: after blocks 2-4

local tail = {}
for i = #events - 2, #events do tail[#tail + 1] = events[i] end
scenario.check(table.concat(tail, "|") == "block 2 runs|block 3 runs|block 4 runs",
  "the held blocks run, in order, only after the last resume")

-- One resume too many is an error, not a crash.
local ok, err = pcall(function() queue:resume() end)
print("an extra resume: " .. (ok and "accepted?!" or ("error: " .. tostring(err))))
scenario.check(not ok, "resuming a queue that is not suspended raises an error")
