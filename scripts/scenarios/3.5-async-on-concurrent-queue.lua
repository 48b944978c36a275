-- title: Async task on a concurrent queue
-- seed: 000 §3 (example 3.5, async task on a concurrent queue)
-- expect: 3 checks
--
-- An async task does not block the caller: the caller goes on to "end test" at once, and the
-- queue runs the task on another thread (not the main thread).
--
-- The caller and the task then run at the same time: "end test" usually comes first, as in the
-- tutorial's output, but the task may start first, or print in the middle of the caller's
-- lines. The last line says which came first in this run. To check that the caller does not
-- wait for the task, the task's last step waits until the caller has printed "end test": were
-- async to wait for the task, the two would wait for each other for ever.
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

-- The caller and the task record what they did here, one at a time (they run at the same time).
local events, eventsQueue = {}, dispatch.queue("events")
local function record(e) eventsQueue:sync(function() events[#events + 1] = e end) end
local endTestPrinted = dispatch.semaphore(0)

-- testAsyncTaskInConcurrentQueue()
printCurrentThread("start test")
concurrentQueue:async(function()
    record("task")
    print("\nconcurrentQueue async task---->")
    local t = printCurrentThread("concurrentQueue async task")
    local inQueue = testIsTaskInQueue("concurrent", concurrentQueueKey)
    print("---->concurrentQueue async task\n")

    endTestPrinted:wait()   -- a caller waiting for this task would never get there
    scenario.check(#events == 2,
        "the caller printed \"end test\" without waiting for the async task to end")
    scenario.check(not t.is_main, "the async task does not run on the main thread")
    scenario.check(inQueue, "the async task sees the concurrent queue's specific value")
    print(events[1] == "end" and "(this run: \"end test\" came before the task started)"
        or "(this run: the task started before \"end test\")")
end)
printCurrentThread("end test")
record("end")
endTestPrinted:signal()
