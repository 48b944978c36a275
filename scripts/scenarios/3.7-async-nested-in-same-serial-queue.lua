-- title: Async nested in the same serial queue from a sync task
-- seed: 000 §3 (example 3.7, async task nested in the same serial queue)
-- expect: 4 checks
--
-- "A serial queue is not limited to one thread": the outer sync task runs on the main
-- thread, the nested async task of the same queue runs later on a worker thread. They never
-- overlap: the async task starts only after the sync task has finished.
--
-- As in the tutorial's output, the async task may start before or after "end test", and its
-- lines may come between the main thread's: once the sync task has ended, the async task (on a
-- worker thread) and the main thread (back from sync) run at the same time. They record what
-- they did on a serial queue, one at a time; the last line says which came first in this run.
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

local events, eventsQueue = {}, dispatch.queue("events")
local function record(e) eventsQueue:sync(function() events[#events + 1] = e end) end
local syncThread

-- testAsyncTaskNestedInSameSerialQueue()
printCurrentThread("start test")
serialQueue:sync(function()
    print("\nserialQueue sync task---->")
    syncThread = printCurrentThread("serialQueue sync task")
    testIsTaskInQueue("serial", serialQueueKey)

    serialQueue:async(function()
        record("async task")
        print("\nserialQueue async task---->")
        local t = printCurrentThread("serialQueue async task")
        local inQueue = testIsTaskInQueue("serial", serialQueueKey)
        print("---->serialQueue async task\n")

        scenario.check(syncThread.is_main, "the sync part runs on the main thread")
        local first = eventsQueue:sync(function() return events[1] end)
        scenario.check(first == "sync task end",
            "the async part starts after the sync part has finished")
        scenario.check(not t.is_main and t.tid ~= syncThread.tid,
            "the async part runs on another thread")
        scenario.check(inQueue, "the async part sees the serial queue's specific value")
    end)

    print("---->serialQueue sync task\n")
    record("sync task end")
end)
printCurrentThread("end test")
record("end test")

-- Only to report this run's order, once the async task has run.
serialQueue:async(function()
    dispatch.main:async(function()
        local second = eventsQueue:sync(function() return events[2] end)
        print(second == "async task" and "(this run: the async task started before \"end test\")"
            or "(this run: the async task started after \"end test\")")
    end)
end)
