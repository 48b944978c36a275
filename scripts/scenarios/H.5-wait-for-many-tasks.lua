-- title: Waiting for many concurrent tasks (group notify, enter/leave and wait)
-- seed: 002 (Waiting on many concurrent tasks to finish)
-- expect: 5 checks, 2 s of delays
--
-- The GCD Handbook, "Waiting on many concurrent tasks to finish".
--
-- Form 1, dispatch_group_async + notify (the blocks themselves are synchronous):
--
--   dispatch_group_t group = dispatch_group_create()
--   for item in someArray {
--       dispatch_group_async(group, backgroundQueue, { performExpensiveWork(item: item) })
--   }
--   dispatch_group_notify(group, dispatch_get_main_queue(), { /* all the work is complete */ })
--
-- Form 2, enter/leave around already-asynchronous work, then wait (must be on
-- a background thread, because wait blocks):
--
--   dispatch_group_t group = dispatch_group_create()
--   for item in someArray {
--       dispatch_group_enter(group)
--       performExpensiveAsyncWork(item: item, completionBlock: { dispatch_group_leave(group) })
--   }
--   dispatch_group_wait(group, DISPATCH_TIME_FOREVER)
--   // all the work is complete

local dispatch = require("dispatch")
local scenario = require("scenario")

local someArray = { "alpha", "bravo", "charlie", "delta", "echo", "foxtrot" }
local backgroundQueue = dispatch.global("default")

-- The tasks run at the same time: they record what is done on a serial queue, one at a time.
local records = dispatch.queue("records")
local function record(list, item) records:sync(function() list[#list + 1] = item end) end

-- Synchronous expensive work, for form 1.
local done1 = {}
local function performExpensiveWork(item)
  dispatch.sleep(scenario.delay(0.2))
  record(done1, item)
  print("form 1: finished " .. item .. " on " .. tostring(dispatch.thread()))
end

-- Asynchronous expensive work with a completion block, for form 2.
local done2 = {}
local function performExpensiveAsyncWork(item, completionBlock)
  backgroundQueue:async(function()
    dispatch.sleep(scenario.delay(0.2))
    record(done2, item)
    print("form 2: finished " .. item)
    completionBlock()
  end)
end

local form2   -- defined below, started when form 1 is complete

-- Form 1
local group = dispatch.group()
for _, item in ipairs(someArray) do
  backgroundQueue:async(function() performExpensiveWork(item) end, { group = group })
end
group:notify(dispatch.main, function()
  print(string.format("form 1: notify on %s: all the work is complete (%d of %d items done)",
    tostring(dispatch.thread()), #done1, #someArray))
  scenario.check(#done1 == #someArray, "form 1: every task is done before notify runs")
  scenario.check(dispatch.thread().is_main, "form 1: notify runs on the main queue")
  form2()
end)
print("form 1: dispatched " .. #someArray .. " tasks; notify is registered, the main thread is free")

function form2()
  -- "must be on a background thread"
  backgroundQueue:async(function()
    scenario.check(not dispatch.thread().is_main, "form 2: the waiting code runs off the main thread")
    local group2 = dispatch.group()
    for _, item in ipairs(someArray) do
      group2:enter()
      performExpensiveAsyncWork(item, function() group2:leave() end)
    end
    -- A notify works with enter/leave too.
    local notified = false
    group2:notify(backgroundQueue, function() notified = true end)

    local ok = group2:wait()
    print(string.format("form 2: wait returned %s: all the work is complete (%d of %d items done)",
      tostring(ok), #done2, #someArray))
    scenario.check(ok == true and #done2 == #someArray, "form 2: every task is done before wait returns")

    dispatch.main:async(function()
      -- wait and notify are not ordered with respect to each other; give the
      -- notify a moment, then check it ran too.
      dispatch.main:after(scenario.delay(0.5), function()
        scenario.check(notified, "form 2: a notify registered on an enter/leave group also runs")
      end)
    end)
  end)
end
