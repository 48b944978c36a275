-- title: Delayed task replaced by a new task at 3 s
-- seed: 000 §5 (example 5.2, AsyncAfter.delay then task(3) { new task })
-- expect: 4 checks, 3 s of delays
--
-- Same AsyncAfter.delay helper as 5.1. The task planned at 2 s is replaced by another task
-- with a delay of 3 s: at 2 s the original is reported cancelled, at 3 s the new one runs.
local dispatch = require("dispatch")
local scenario = require("scenario")

local t0 = dispatch.now()
local function date()   -- Date(), with the elapsed time since the start
    return string.format("%s (+%.2f s)", os.date("!%Y-%m-%d %H:%M:%S +0000"), dispatch.now() - t0)
end

local cancelledAt, newTaskAt
local originalRan = false

local AsyncAfter = {}

--- run a closure after a delay
function AsyncAfter.dispatch_later(time, block)
    local t = dispatch.now() + time
    dispatch.main:after(t, block)
end

--- Run a task after a delay; before it runs it can be replaced by a new task with a new
--- delay. Returns the closure that replaces it: exchangeableTask(newDelayTime, anotherTask).
function AsyncAfter.delay(time, yourTask)
    local exchangingTask   -- the replacement task
    local newDelayTime     -- the new delay

    local function finalClosure()
        if exchangingTask == nil then
            dispatch.main:async(yourTask)
        else
            if newDelayTime == nil then
                dispatch.main:async(function()
                    print("The task was changed, now: " .. date())
                    exchangingTask()
                end)
            end
            print("The original task was cancelled, now: " .. date())
            cancelledAt = dispatch.now() - t0
        end
    end

    AsyncAfter.dispatch_later(time, finalClosure)

    local exchangeableTask = function(delayTime, anotherTask)
        exchangingTask = anotherTask
        newDelayTime = delayTime

        if delayTime ~= nil then
            AsyncAfter.dispatch_later(delayTime, function()
                anotherTask()
                print("The task was changed, now: " .. date())
            end)
        end
    end
    return exchangeableTask
end

-- asyncAfterNewTaskButtonTapped
print("now: " .. date())
local task = AsyncAfter.delay(scenario.delay(2), function()
    originalRan = true
    print("Make a phone call at: " .. date())
end)

-- 3 seconds later, run a new task instead
task(scenario.delay(3), function()
    print("Had a pizza, now: " .. date())
    newTaskAt = dispatch.now() - t0
    -- (checks, once the main queue has finished with the replacement)
    dispatch.main:async(function()
        -- Timers never fire early; their order shows the rest.
        scenario.check(cancelledAt ~= nil and cancelledAt >= scenario.delay(2),
            "\"original cancelled\" comes at >= 2 s")
        scenario.check(newTaskAt >= scenario.delay(3), "the new task runs at >= 3 s")
        scenario.check(cancelledAt ~= nil and cancelledAt < newTaskAt,
            "the original is cancelled before the new task runs")
        scenario.check(not originalRan, "the original task never runs")
    end)
end)
