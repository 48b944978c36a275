-- title: Sync task on a serial queue
-- seed: 000 §3 (example 3.1, sync task on a serial queue)
-- expect: 3 checks
--
-- A sync task blocks the calling thread and runs right there: here the caller is the
-- main thread, so the task runs on the main thread while "belonging" to the serial
-- queue (it sees the queue's specific value), and "end test" comes after it.
local dispatch = require("dispatch")
local scenario = require("scenario")

-- Helper 1 of the tutorial: printCurrentThread(with:)
local function printCurrentThread(des, terminator)
    local t = dispatch.thread()
    print(string.format("%s at thread: %s, this is %smain thread%s",
        des, tostring(t), t.is_main and "" or "not ", terminator or ""))
    return t
end

-- Helper 2 of the tutorial: testIsTaskInQueue(_:key:) through DispatchQueue.getSpecific
local function testIsTaskInQueue(queueType, key)
    local inQueue = dispatch.get_specific(key) == queueType
    print(string.format("Is task in %s queue: %s", queueType, tostring(inQueue)))
    return inQueue
end

-- The queues and keys of the tutorial (only the serial one is used here)
local serialQueue = dispatch.queue("com.sinkingsoul.DispatchQueueTest.serialQueue")
local serialQueueKey = dispatch.specific_key("serialQueueKey")
serialQueue:set_specific(serialQueueKey, "serial")

local events = {}

-- testSyncTaskInSerialQueue()
printCurrentThread("start test")
events[#events + 1] = "start"
local taskThread, taskInQueue
serialQueue:sync(function()
    print("\nserialQueue sync task---->")
    taskThread = printCurrentThread("serialQueue sync task")
    taskInQueue = testIsTaskInQueue("serial", serialQueueKey)
    print("---->serialQueue sync task\n")
    events[#events + 1] = "task"
end)
printCurrentThread("end test")
events[#events + 1] = "end"

scenario.check(taskThread ~= nil and taskThread.is_main, "the sync task runs on the calling (main) thread")
scenario.check(taskInQueue == true, "the sync task sees the serial queue's specific value")
scenario.check(table.concat(events, ",") == "start,task,end", "\"end test\" comes after the sync task")
