-- title: Group with work on default, low-priority and main queues; wait in background
-- seed: 004 (22.9 Dispatch groups)
-- expect: 8 checks, 10.5 s of delays
--
-- The chapter's group.m (its listing is a picture; this follows the text):
-- one group, a block on the default global queue ("I seem to be a verb"), a
-- block on the low-priority global queue that sleeps 5 s ("background
-- groovy!"), a block on the main queue ("main queue groovy!"), a notify
-- handler, and a wait running on a global queue ("starting to wait" ...
-- "Wait returned with result: 0") so that the main thread stays free. The
-- main thread then sleeps 10 s and runs its run loop for 10 s to drain the
-- main queue. The chapter explains the output:
--
--   - the default-priority queue runs first: "I seem to be a verb" and
--     "starting to wait";
--   - 5 s later the low-priority queue prints "background groovy!";
--   - 5 s after that the main thread's run loop starts: "main queue groovy!";
--   - once all work items are done: "Wait returned with result: 0".
--
-- Here the main thread sleeps with dispatch.sleep, and the CLI's servicing of
-- the main queue after the script ends plays the part of the run loop. Times
-- are scaled by scenario.delay.

local dispatch = require("dispatch")
local scenario = require("scenario")

local start = dispatch.now()
-- The blocks log from several threads at the same time: NSLog writes one line at a time, and
-- so does this one, through a serial queue.
local log, logQueue = {}, dispatch.queue("NSLog")
local function NSLog(msg)
  local line = string.format("[%6.3f s] %s  (%s)", dispatch.now() - start, msg, tostring(dispatch.thread()))
  logQueue:sync(function()
    log[#log + 1] = msg
    print(line)
  end)
end
local function index(msg)
  return logQueue:sync(function()
    for i, m in ipairs(log) do if m == msg then return i end end
    return math.huge
  end)
end

local group = dispatch.group()

local queue = dispatch.global("default")
queue:async(function()
  NSLog("I seem to be a verb")
end, { group = group })

queue = dispatch.global("utility")            -- DISPATCH_QUEUE_PRIORITY_LOW
queue:async(function()
  dispatch.sleep(scenario.delay(5))
  NSLog("background groovy!")
end, { group = group })

queue = dispatch.main
queue:async(function()
  NSLog("main queue groovy!")
  scenario.check(dispatch.thread().is_main, "the main queue item runs on the main thread")
end, { group = group })

local notified = false
group:notify(dispatch.global("default"), function()
  notified = true
  NSLog("notify: the group is empty")
end)

-- The wait must not block the main thread, so it runs on a global queue.
local waitResult
dispatch.global("default"):async(function()
  NSLog("starting to wait")
  waitResult = group:wait()
  NSLog("Wait returned with result: " .. (waitResult and 0 or 1))

  -- Everything has happened; check the order the chapter explains.
  dispatch.main:async(function()
    local verb, waiting, bg = index("I seem to be a verb"), index("starting to wait"), index("background groovy!")
    local mainItem, wakeUp, returned = index("main queue groovy!"), index("main thread wakes up"), index("Wait returned with result: 0")
    scenario.check(verb < bg and waiting < bg, "the default-priority items print before background groovy")
    scenario.check(bg < wakeUp, "background groovy ends before the main thread's sleep is over")
    scenario.check(wakeUp < mainItem, "the main queue item runs only when the main thread serves its queue")
    scenario.check(returned > verb and returned > bg and returned > mainItem, "the wait returns after all three items")
    scenario.check(waitResult == true, "the wait returns success (result 0)")
    -- notify and wait are both released when the group empties; give the
    -- notify a moment if it has not printed yet.
    dispatch.main:after(scenario.delay(0.5), function()
      scenario.check(notified and index("notify: the group is empty") > mainItem, "notify runs after all three items")
    end)
  end)
end)

-- The main thread sleeps ten seconds ...
dispatch.sleep(scenario.delay(10))
NSLog("main thread wakes up")
scenario.check(index("main queue groovy!") == math.huge, "nothing on the main queue ran while the main thread slept")
-- ... and then the main queue is drained (the chapter's ten seconds of run loop).
