-- title: Async task on a concurrent queue
-- seed: 000 §3 (example 3.5, async task on a concurrent queue)
-- expect: 3 checks
--
-- An async task does not block the caller: "end test" is printed first, and the queue
-- runs the task on another thread (not the main thread).
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

local events = {}

-- testAsyncTaskInConcurrentQueue()
printCurrentThread("start test")
concurrentQueue:async(function()
    events[#events + 1] = "task"
    print("\nconcurrentQueue async task---->")
    local t = printCurrentThread("concurrentQueue async task")
    local inQueue = testIsTaskInQueue("concurrent", concurrentQueueKey)
    print("---->concurrentQueue async task\n")

    scenario.check(events[1] == "end", "\"end test\" is printed before the async task")
    scenario.check(not t.is_main, "the async task does not run on the main thread")
    scenario.check(inQueue, "the async task sees the concurrent queue's specific value")
end)
printCurrentThread("end test")
events[#events + 1] = "end"
