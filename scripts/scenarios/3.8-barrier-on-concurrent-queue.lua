-- title: Barrier task on a concurrent queue
-- seed: 000 §3 (example 3.8, barrier task on a concurrent queue)
-- expect: 3 checks, 0.3 s of delays
--
-- A barrier work item waits for the tasks already in the queue (1-3) to finish, runs
-- alone, and the tasks added after it (4-6) start only once it is done.
--
-- The tasks of one side of the barrier run at the same time, so their lines may interleave,
-- as in the tutorial's output. Each task sleeps a moment (simulated work) between its "---->"
-- lines, so that they overlap as they do there; the order of events is recorded on a serial
-- queue, one event at a time, since tasks that run at the same time may interleave at any
-- instruction.
local dispatch = require("dispatch")
local scenario = require("scenario")

local function printCurrentThread(des, terminator)
    local t = dispatch.thread()
    print(string.format("%s at thread: %s, this is %smain thread%s",
        des, tostring(t), t.is_main and "" or "not ", terminator or ""))
    return t
end

local concurrentQueue = dispatch.queue{
    label = "com.sinkingsoul.DispatchQueueTest.concurrentQueue", concurrent = true }

local events = {}      -- "start 1", "end 1", ..., "start barrier", "end barrier"
local eventsQueue = dispatch.queue("events")
local function record(e) eventsQueue:sync(function() events[#events + 1] = e end) end
local group = dispatch.group()   -- only used to check the order once everything is done

local function work()
    dispatch.sleep(scenario.delay(0.1))
end

-- barrierTask()
local queue = concurrentQueue
local barrierTask = dispatch.work_item(function()
    record("start barrier")
    print("\nbarrierTask---->")
    printCurrentThread("barrierTask")
    work()
    print("---->barrierTask\n")
    record("end barrier")
end, { barrier = true })

local function asyncTask(n)
    return function()
        record("start " .. n)
        print("\nasync task" .. n .. "---->")
        printCurrentThread("async task" .. n)
        work()
        print("---->async task" .. n .. "\n")
        record("end " .. n)
    end
end

printCurrentThread("start test")

queue:async(asyncTask(1), { group = group })
queue:async(asyncTask(2), { group = group })
queue:async(asyncTask(3), { group = group })

queue:async(barrierTask, { group = group })   -- the barrier task

queue:async(asyncTask(4), { group = group })
queue:async(asyncTask(5), { group = group })
queue:async(asyncTask(6), { group = group })

printCurrentThread("end test")

group:notify(dispatch.main, function()
    local pos = {}
    for i, e in ipairs(events) do pos[e] = i end
    print("order of events: " .. table.concat(events, ", "))
    local before, after = true, true
    for n = 1, 3 do
        before = before and pos["end " .. n] ~= nil and pos["end " .. n] < pos["start barrier"]
    end
    for n = 4, 6 do
        after = after and pos["start " .. n] ~= nil and pos["start " .. n] > pos["end barrier"]
    end
    scenario.check(#events == 14, "all six tasks and the barrier ran")
    scenario.check(before, "tasks 1-3 end before the barrier starts")
    scenario.check(after, "tasks 4-6 start after the barrier ends")
end)
