-- title: Sync nested in another serial queue
-- seed: 000 §3 (example 3.4, sync task nested in another serial queue)
-- expect: 4 checks
--
-- A task of serialQueue may block its thread with a sync task of *another* serial queue:
-- both run on the same (main) thread, but the inner task belongs to serialQueue2 only.
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

-- testSyncTaskNestedInOtherSerialQueue()
-- create another serial queue
local serialQueue2 = dispatch.queue("com.sinkingsoul.DispatchQueueTest.serialQueue2")
local serialQueueKey2 = dispatch.specific_key("serialQueueKey2")
serialQueue2:set_specific(serialQueueKey2, "serial2")

printCurrentThread("start test")
local outer, inner, outerInSerial, innerInSerial, innerInSerial2
serialQueue:sync(function()
    print("\nserialQueue sync task---->")
    outer = printCurrentThread("serialQueue sync task")
    outerInSerial = testIsTaskInQueue("serial", serialQueueKey)

    serialQueue2:sync(function()
        print("\nserialQueue2 sync task---->")
        inner = printCurrentThread("serialQueue2 sync task")
        innerInSerial = testIsTaskInQueue("serial", serialQueueKey)

        local value = dispatch.get_specific(serialQueueKey2)
        innerInSerial2 = value == "serial2"
        print("Is task in serialQueue2: " .. tostring(innerInSerial2))
        print("---->serialQueue2 sync task\n")
    end)

    print("---->serialQueue sync task\n")
end)

scenario.check(outer.is_main and inner.is_main, "both sync tasks run on the main thread")
scenario.check(outerInSerial == true, "the outer task sees serialQueue's key")
scenario.check(innerInSerial2 == true, "the inner task sees serialQueue2's key")
scenario.check(innerInSerial == false, "the inner task does not see serialQueue's key")
