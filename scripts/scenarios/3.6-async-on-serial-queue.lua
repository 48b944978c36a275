-- title: Async task on a serial queue
-- seed: 000 §3 (example 3.6, async task on a serial queue)
-- expect: 3 checks
--
-- Same as 3.5 with a serial queue: the caller goes on to "end test" at once, and the task
-- runs on a thread other than the main thread. As in 3.5, the caller and the task then run at
-- the same time (the last line says which printed first), and the task's last step waits until
-- the caller has printed "end test", which a caller waiting for the task would never do.
local dispatch = require("dispatch")
local scenario = require("scenario")

local function printCurrentThread(des, terminator)
    local t = dispatch.thread()
    print(string.format("%s at thread: %s, this is %smain thread%s",
        des, tostring(t), t.is_main and "" or "not ", terminator or ""))
    return t
end

local function testIsTaskInQueue(queueType, key)
    local inQueue = dispatch.get_specific(key) == queueType
    print(string.format("Is task in %s queue: %s", queueType, tostring(inQueue)))
    return inQueue
end

local serialQueue = dispatch.queue("com.sinkingsoul.DispatchQueueTest.serialQueue")
local serialQueueKey = dispatch.specific_key("serialQueueKey")
serialQueue:set_specific(serialQueueKey, "serial")

-- The caller and the task record what they did here, one at a time (they run at the same time).
local events, eventsQueue = {}, dispatch.queue("events")
local function record(e) eventsQueue:sync(function() events[#events + 1] = e end) end
local endTestPrinted = dispatch.semaphore(0)

-- testAsyncTaskInSerialQueue()
printCurrentThread("start test")
serialQueue:async(function()
    record("task")
    print("\nserialQueue async task---->")
    local t = printCurrentThread("serialQueue async task")
    local inQueue = testIsTaskInQueue("serial", serialQueueKey)
    print("---->serialQueue async task\n")

    endTestPrinted:wait()   -- a caller waiting for this task would never get there
    scenario.check(#events == 2,
        "the caller printed \"end test\" without waiting for the async task to end")
    scenario.check(not t.is_main, "the async task does not run on the main thread")
    scenario.check(inQueue, "the async task sees the serial queue's specific value")
    print(events[1] == "end" and "(this run: \"end test\" came before the task started)"
        or "(this run: the task started before \"end test\")")
end)
printCurrentThread("end test")
record("end")
endTestPrinted:signal()
