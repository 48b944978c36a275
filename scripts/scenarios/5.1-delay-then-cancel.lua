-- title: Delayed task cancelled by replacing it with an empty task
-- seed: 000 §5 (example 5.1, AsyncAfter.delay then task(0) {})
-- expect: 3 checks, 2 s of delays
--
-- AsyncAfter.delay(time, yourTask) schedules a closure and returns an "exchangeable task":
-- calling it with a new delay and another task replaces what will run. Replacing with an
-- empty closure and a delay of 0 cancels at once: "changed" is printed immediately, and at
-- 2 s the scheduled closure only reports that the original task was cancelled.
local dispatch = require("dispatch")
local scenario = require("scenario")

local t0 = dispatch.now()
local function date()   -- Date(), with the elapsed time since the start
    return string.format("%s (+%.2f s)", os.date("!%Y-%m-%d %H:%M:%S +0000"), dispatch.now() - t0)
end

local changedAt, cancelledAt
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
            -- (checks, once the main queue has run what this closure queued)
            dispatch.main:async(function()
                scenario.check(changedAt ~= nil and changedAt < cancelledAt,
                    "\"changed\" is printed at once, before the original time")
                scenario.check(cancelledAt >= scenario.delay(2),
                    "\"original cancelled\" comes at >= 2 s")
                scenario.check(not originalRan, "the original task never runs")
            end)
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
                changedAt = dispatch.now() - t0
            end)
        end
    end
    return exchangeableTask
end

-- asyncAfterCancelButtonTapped
print("now: " .. date())
local task = AsyncAfter.delay(scenario.delay(2), function()
    originalRan = true
    print("Make a phone call at: " .. date())
end)

-- cancel the task at once: replace it with an empty closure, with a delay of 0
task(0, function() end)
