-- title: Semaphore of 2 limits three 2 s tasks
-- seed: 000 §11 (example 11.1, DispatchSemaphoreTest.limitTaskNumber)
--
-- A semaphore of value 2 lets at most two tasks run at once: the submitting thread waits
-- on the semaphore before each submission and each task signals when it ends. Tasks 1 and 2
-- run together; task 3 begins only after one of them has ended, so all three take ~4 s.
local dispatch = require("dispatch")
local scenario = require("scenario")

local events = {}
local t0 = dispatch.now()
local group = dispatch.group()   -- (not in the tutorial: lets the script check the order at the end)

--- the task
local function task(index)
    print(string.format("Begin task %d ---->", index))
    events[#events + 1] = "begin " .. index
    dispatch.sleep(scenario.delay(2))
    print(string.format("Sleep for 2 seconds in task %d.", index))
    print(string.format("---->End task %d.", index))
    events[#events + 1] = "end " .. index
end

--- limit the number of tasks running at the same time
local function limitTaskNumber()
    local queue = dispatch.queue{
        label = "com.sinkingsoul.DispatchQueueTest.concurrentQueue", concurrent = true }
    local semaphore = dispatch.semaphore(2)   -- a semaphore of value 2

    semaphore:wait()
    queue:async(function()
        task(1)
        semaphore:signal()
    end, { group = group })

    semaphore:wait()
    queue:async(function()
        task(2)
        semaphore:signal()
    end, { group = group })

    semaphore:wait()
    queue:async(function()
        task(3)
        semaphore:signal()
    end, { group = group })
end

limitTaskNumber()

group:notify(dispatch.main, function()
    local total = dispatch.now() - t0
    local pos = {}
    for i, e in ipairs(events) do pos[e] = i end
    print(string.format("(all three tasks took %.2f s)", total))
    scenario.check(#events == 6, "all three tasks ran")
    scenario.check(pos["begin 1"] < pos["end 2"] and pos["begin 2"] < pos["end 1"],
        "tasks 1 and 2 run at the same time")
    scenario.check(pos["begin 3"] > math.min(pos["end 1"], pos["end 2"]),
        "task 3 begins only after one of tasks 1-2 has ended")
    scenario.check(total >= scenario.delay(4) * 0.9, "the three tasks take about 4 s (not less)")
    scenario.check(total < scenario.delay(4) + 1.5, "the three tasks take about 4 s (not 6)")
end)
