-- title: Completion block: average_async(data, queue, block)
-- seed: 003 (Performing a completion block when a task is done)
-- expect: 5 checks, 0.2 s of delays
--
-- Apple's dispatch queue guide:
--
--   void average_async(int *data, size_t len, dispatch_queue_t queue, void (^block)(int)) {
--      dispatch_retain(queue);
--      dispatch_async(dispatch_get_global_queue(DISPATCH_QUEUE_PRIORITY_DEFAULT, 0), ^{
--         int avg = average(data, len);
--         dispatch_async(queue, ^{ block(avg);});
--         dispatch_release(queue);
--      });
--   }
--
-- In Lua the closure holds `queue`, which plays the part of dispatch_retain:
-- the caller can drop its own reference at once.

local dispatch = require("dispatch")
local scenario = require("scenario")

local function average(data)
  local sum = 0
  for _, v in ipairs(data) do sum = sum + v end
  return sum // #data            -- int average, as in the C code
end

local function average_async(data, queue, block)
  -- Do the work on the default concurrent queue and then
  -- call the user-provided block with the results.
  dispatch.global("default"):async(function()
    print("computing the average on " .. tostring(dispatch.thread()))
    local avg = average(data)
    queue:async(function() block(avg) end)
  end)
end

local key = dispatch.specific_key("result queue")
local results = {}

-- 1. Results delivered on a private serial queue, which the caller does not
--    keep a reference to.
do
  local resultQueue = dispatch.queue("com.example.ResultQueue")
  resultQueue:set_specific(key, "ResultQueue")
  average_async({ 3, 8, 10, 15, 24 }, resultQueue, function(avg)
    results.private = { avg = avg, on = dispatch.get_specific(key) }
    print(string.format("completion block: average %d, on queue %s (%s)",
      avg, tostring(dispatch.current_label()), tostring(dispatch.thread())))
  end)
end
collectgarbage()   -- the caller's reference is gone; the pending work keeps the queue alive

-- 2. Results delivered on the main queue.
average_async({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, dispatch.main, function(avg)
  results.main = { avg = avg, is_main = dispatch.thread().is_main }
  print(string.format("completion block: average %d, on the main thread: %s", avg, tostring(dispatch.thread().is_main)))
end)

-- Check once both completions have had time to run.
local started = dispatch.now()
local function check()
  if not (results.private and results.main) and dispatch.now() - started < 10 then
    dispatch.main:after(scenario.delay(0.1), check)
    return
  end
  scenario.check(results.private ~= nil and results.main ~= nil, "both completion blocks ran")
  if not (results.private and results.main) then return end
  scenario.check(results.private.avg == 12, "the block gets the right average (3, 8, 10, 15, 24 -> 12)")
  scenario.check(results.private.on == "ResultQueue", "the block runs on the queue given to average_async")
  scenario.check(results.main.avg == 5, "the block gets the right average (1..10 -> 5 in int arithmetic)")
  scenario.check(results.main.is_main, "the block given the main queue runs on the main thread")
end
dispatch.main:after(scenario.delay(0.1), check)
