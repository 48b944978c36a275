-- title: Semaphore of 2 limits three 2 s tasks
-- seed: 000 §11 (example 11.1, DispatchSemaphoreTest.limitTaskNumber)
-- expect: 5 checks, 4 s of delays
--
-- A semaphore of value 2 lets at most two tasks run at once: the submitting thread waits
-- on the semaphore before each submission and each task signals when it ends. Tasks 1 and 2
-- run together; task 3 is submitted, and so begins, only after one of them has ended, so all
-- three take ~4 s (not 2, and not 6).
--
-- What the semaphore holds back is the submission: the script records when each task is
-- submitted. (That task 3 begins late proves less: a concurrent queue on a 2-core machine may
-- run only two blocks at once by itself.)
local dispatch = require("dispatch")
local scenario = require("scenario")

-- The tasks and the submitting thread run at the same time: they record their events on a
-- serial queue, one at a time.
local events, eventsQueue = {}, dispatch.queue("events")
local function record(e) eventsQueue:sync(function() events[#events + 1] = e end) end
local t0 = dispatch.now()
local group = dispatch.group()   -- (not in the tutorial: lets the script check the order at the end)

--- the task
local function task(index)
    print(string.format("Begin task %d ---->", index))
    record("begin " .. index)
    dispatch.sleep(scenario.delay(2))
    print(string.format("Sleep for 2 seconds in task %d.", index))
    print(string.format("---->End task %d.", index))
    record("end " .. index)
end

--- limit the number of tasks running at the same time
local function limitTaskNumber()
    local queue = dispatch.queue{
        label = "com.sinkingsoul.DispatchQueueTest.concurrentQueue", concurrent = true }
    local semaphore = dispatch.semaphore(2)   -- a semaphore of value 2

    semaphore:wait()
    record("submit 1")
    queue:async(function()
        task(1)
        semaphore:signal()
    end, { group = group })

    semaphore:wait()
    record("submit 2")
    queue:async(function()
        task(2)
        semaphore:signal()
    end, { group = group })

    semaphore:wait()
    record("submit 3")
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
    scenario.check(#events == 9, "all three tasks ran")
    scenario.check(pos["begin 1"] < pos["end 2"] and pos["begin 2"] < pos["end 1"],
        "tasks 1 and 2 run at the same time")
    scenario.check(pos["submit 3"] > math.min(pos["end 1"], pos["end 2"]),
        "task 3 is submitted only after one of tasks 1-2 has ended")
    scenario.check(pos["begin 3"] > math.min(pos["end 1"], pos["end 2"]),
        "task 3 begins only after one of tasks 1-2 has ended")
    -- Each task sleeps 2 s, and two of them run one after the other: never less than 4 s.
    scenario.check(total >= scenario.delay(4) - 0.001, "the three tasks take at least 4 s")
end)
