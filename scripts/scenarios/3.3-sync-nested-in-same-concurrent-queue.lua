-- title: Sync nested in the same concurrent queue
-- seed: 000 §3 (example 3.3, sync task nested in the same concurrent queue)
-- expect: 4 checks
--
-- A concurrent queue's thread may be blocked by a task of the same queue: the nested
-- sync task simply runs on the current thread (the one of the outer async task) and then
-- the outer task continues. No deadlock.
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

local concurrentQueue = dispatch.queue{
    label = "com.sinkingsoul.DispatchQueueTest.concurrentQueue", concurrent = true }
local concurrentQueueKey = dispatch.specific_key("concurrentQueueKey")
concurrentQueue:set_specific(concurrentQueueKey, "concurrent")

-- testSyncTaskNestedInSameConcurrentQueue()
printCurrentThread("start test")
concurrentQueue:async(function()
    print("\nconcurrentQueue async task--->")
    local outer = printCurrentThread("concurrentQueue async task")
    local outerInQueue = testIsTaskInQueue("concurrent", concurrentQueueKey)

    local inner, innerInQueue
    local events = {}
    concurrentQueue:sync(function()
        print("\nconcurrentQueue sync task--->")
        inner = printCurrentThread("concurrentQueue sync task")
        innerInQueue = testIsTaskInQueue("concurrent", concurrentQueueKey)
        print("---->concurrentQueue sync task\n")
        events[#events + 1] = "nested sync task done"
    end)
    events[#events + 1] = "outer task goes on"

    print("---->concurrentQueue async task\n")

    scenario.check(outerInQueue and innerInQueue, "both tasks see the concurrent queue's specific value")
    scenario.check(inner ~= nil and inner.tid == outer.tid,
        "the nested sync task runs on the same thread as the outer task")
    scenario.check(not outer.is_main, "the outer async task is not on the main thread")
    scenario.check(table.concat(events, ", ") == "nested sync task done, outer task goes on",
        "no deadlock: the nested sync task ran to the end, then the outer task went on")
end)
printCurrentThread("end test")
