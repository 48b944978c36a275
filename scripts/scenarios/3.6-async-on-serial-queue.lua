-- title: Async task on a serial queue
-- seed: 000 §3 (example 3.6, async task on a serial queue)
-- expect: 3 checks
--
-- Same as 3.5 with a serial queue: the caller goes on ("end test" first) and the task
-- runs on a thread other than the main thread.
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

local events = {}

-- testAsyncTaskInSerialQueue()
printCurrentThread("start test")
serialQueue:async(function()
    events[#events + 1] = "task"
    print("\nserialQueue async task---->")
    local t = printCurrentThread("serialQueue async task")
    local inQueue = testIsTaskInQueue("serial", serialQueueKey)
    print("---->serialQueue async task\n")

    scenario.check(events[1] == "end", "\"end test\" is printed before the async task")
    scenario.check(not t.is_main, "the async task does not run on the main thread")
    scenario.check(inQueue, "the async task sees the serial queue's specific value")
end)
printCurrentThread("end test")
events[#events + 1] = "end"
