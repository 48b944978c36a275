-- title: Sync nested in the same serial queue (deadlock)
-- seed: 000 §3 (example 3.2, sync task nested in the same serial queue)
-- expect: 4 checks
--
-- In the tutorial the nested `serialQueue.sync` inside a task of serialQueue deadlocks and
-- the app crashes (EXC_BREAKPOINT). A serial queue's thread may not be blocked by a task
-- of the same queue. The Lua runtime detects this rule and raises a Lua error instead of
-- crashing, so here the nested sync is wrapped in pcall and the error is printed.
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

-- testSyncTaskNestedInSameSerialQueue()
printCurrentThread("start test")
serialQueue:async(function()
    print("\nserialQueue async task---->")
    local outer = printCurrentThread("serialQueue async task")
    testIsTaskInQueue("serial", serialQueueKey)

    local innerRan = false
    -- Swift: self.serialQueue.sync { ... }   // Thread 9: EXC_BREAKPOINT (deadlock)
    local ok, err = pcall(serialQueue.sync, serialQueue, function()
        innerRan = true
        print("\nserialQueue sync task---->")
        printCurrentThread("serialQueue sync task")
        testIsTaskInQueue("serial", serialQueueKey)
        print("---->serialQueue sync task\n")
    end)
    if not ok then
        print("\n(the original crashes here with a deadlock; the Lua runtime reports it instead)")
        print("deadlock reported: " .. tostring(err) .. "\n")
    end

    print("---->serialQueue async task\n")

    scenario.check(not outer.is_main, "the async task runs on a thread other than main")
    scenario.check(not ok, "the nested sync on the same serial queue raises a Lua error")
    scenario.check(not innerRan, "the nested sync task never runs")
    scenario.check(type(err) == "string" and err:find(serialQueue.label, 1, true) ~= nil,
        "the deadlock error names the queue")
end)
printCurrentThread("end test")
