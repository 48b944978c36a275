-- title: Background work, then back to the main queue
-- seed: 002 (Background work)
-- expect: 5 checks, 2 s of delays
--
-- The GCD Handbook, "Background work": do something expensive on a global
-- queue, then hop back to the main queue to use the result (in an app, UIKit
-- may only be touched on the main thread):
--
--   dispatch_async(backgroundQueue, {
--       let result = doSomeExpensiveWork()
--       dispatch_async(dispatch_get_main_queue(), {
--           // use `result` somehow
--       })
--   })
--
-- There is no UI here: "using the result" is a print on the main queue, and
-- the script checks that it really runs on the main thread. The background block
-- and the script run at the same time, so events are recorded on a serial queue,
-- one at a time.

local dispatch = require("dispatch")
local scenario = require("scenario")

local events, eventsQueue = {}, dispatch.queue("events")
local function event(name) eventsQueue:sync(function() events[#events + 1] = name end) end

-- A long-running task that returns a value.
local function doSomeExpensiveWork()
  dispatch.sleep(scenario.delay(1))        -- simulated slow work
  local sum = 0
  for i = 1, 1000 do sum = sum + i end
  return sum                               -- 500500
end

-- The Handbook only ever uses the default priority global queue.
local backgroundQueue = dispatch.global("default")

print("main script on " .. tostring(dispatch.thread()))

-- Step 1: the pattern as written, async outside and async inside.
backgroundQueue:async(function()
  local t = dispatch.thread()
  print("expensive work on " .. tostring(t))
  scenario.check(not t.is_main, "the expensive work runs off the main thread")
  local result = doSomeExpensiveWork()
  event("work done")

  dispatch.main:async(function()
    local tm = dispatch.thread()
    print("using result " .. result .. " on " .. tostring(tm))
    scenario.check(tm.is_main, "the result is used on the main thread")
    scenario.check(result == 500500, "the main queue block sees the result computed in the background")
    event("result used")

    -- Step 2: the inner call may be sync ("it doesn't matter when it
    -- returns"); the outer one must stay async so the main thread is never
    -- blocked.
    backgroundQueue:async(function()
      local result2 = doSomeExpensiveWork()
      dispatch.main:sync(function()
        print("using second result " .. result2 .. " on " .. tostring(dispatch.thread()))
        scenario.check(dispatch.thread().is_main, "the second result (inner sync) is used on the main thread")
        event("second result used")
      end)
      -- main:sync returned: the main queue has finished with the result.
      print("background block continues after the inner sync on " .. tostring(dispatch.thread()))
      event("after inner sync")

      dispatch.main:async(function()
        print("order of events: " .. table.concat(events, ", "))
        local at = {}
        for i, e in ipairs(events) do at[e] = i end
        -- Main-queue blocks run only once the script has ended, so after "async returned"
        -- whether or not the background work was done first (it usually is not).
        scenario.check(#events == 5 and at["async returned"] < at["result used"]
          and at["work done"] < at["result used"] and at["result used"] < at["second result used"]
          and at["second result used"] < at["after inner sync"],
          "the work, then the uses on main (after the script has gone on), happen in order")
      end)
    end)
  end)
end)

-- dispatch_async returns before the block runs: the main thread is free.
event("async returned")
print("dispatch_async returned at once; the main thread stays free")
