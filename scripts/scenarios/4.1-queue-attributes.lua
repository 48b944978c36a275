-- title: Queue attributes: QoS, initially inactive, target queue
-- seed: 000 §4 (queue attributes: qos, attributes .concurrent/.initiallyInactive, target)
-- expect: 9 checks, 2.5 s of delays
--
-- §4 lists the arguments of DispatchQueue(label:qos:attributes:autoreleaseFrequency:target:)
-- without an example; this script shows each one:
--   * qos: the priority class of a queue; without one, a queue runs at its target's;
--   * initiallyInactive: tasks wait until queue.activate();
--   * target: tasks really run on the target queue. Since Swift 3 the target can only be set
--     at creation or while the queue is still inactive; two queues targeting one serial
--     queue never run at the same time, even when they are concurrent queues.
-- (autoreleaseFrequency has no meaning outside Objective-C runtimes and is not shown.)
-- The main thread drives the steps one after the other with blocking waits.
local dispatch = require("dispatch")
local scenario = require("scenario")

local function printCurrentThread(des, terminator)
    local t = dispatch.thread()
    print(string.format("%s at thread: %s, this is %smain thread%s",
        des, tostring(t), t.is_main and "" or "not ", terminator or ""))
    return t
end

---------------------------------------------------------------------------------------------
print("QoS, from highest to lowest (q.qos is what Dispatch reports for the queue):")
local levels = { "user_interactive", "user_initiated", "default", "utility", "background" }
local reported = {}
for _, qos in ipairs(levels) do
    local q = dispatch.queue{ label = "com.sinkingsoul.DispatchQueueTest." .. qos, qos = qos }
    reported[#reported + 1] = q.qos
    print(string.format("  %-45s qos = %s", q.label, q.qos))
end
-- libdispatch on Linux has no kernel QoS support: it makes user_interactive queues
-- user_initiated (the highest level it has for queues).
print("  (on Linux, Dispatch runs user_interactive queues at user_initiated)")
scenario.check(table.concat(reported, ",") == "user_initiated,user_initiated,default,utility,background",
    "Dispatch reports each queue's QoS as created (user_interactive becomes user_initiated on Linux)")

-- Without a QoS of its own (the default, as in Swift) a queue takes its target's: here two
-- concurrent queues target the background and the user-initiated global queues. Each QoS level
-- has its own worker threads, so their blocks never share a thread.
local group = dispatch.group()
local threadsOf = {}
for _, level in ipairs({ "background", "user_initiated" }) do
    local q = dispatch.queue{ label = "com.sinkingsoul.DispatchQueueTest.to-" .. level,
        concurrent = true, target = dispatch.global(level) }
    print(string.format("  %-45s qos = %s (no QoS given; targets the %s global queue)", q.label, q.qos, level))
    threadsOf[level] = {}
    for _ = 1, 4 do
        q:async(function()
            threadsOf[level][dispatch.thread().number] = true
            dispatch.sleep(scenario.delay(0.05))   -- some work, so that each level needs threads
        end, { group = group })
    end
end
group:wait()
local shared, listed = false, {}
for _, level in ipairs({ "background", "user_initiated" }) do
    local nums = {}
    for n in pairs(threadsOf[level]) do
        nums[#nums + 1] = n
        if level == "user_initiated" and threadsOf.background[n] then shared = true end
    end
    table.sort(nums)
    listed[#listed + 1] = level .. " on thread(s) " .. table.concat(nums, ", ")
end
print("  blocks ran: " .. table.concat(listed, "; "))
scenario.check(not shared, "a queue without a QoS runs at its target's level, on that level's own threads")

---------------------------------------------------------------------------------------------
print("\nAttributes: concurrent and initiallyInactive")
local targetQueue = dispatch.queue("com.sinkingsoul.DispatchQueueTest.targetQueue")
local targetKey = dispatch.specific_key("targetKey")
targetQueue:set_specific(targetKey, "target")

local inactiveQueue = dispatch.queue{
    label = "com.sinkingsoul.DispatchQueueTest.inactiveQueue", concurrent = true, inactive = true }
print(string.format("created %s (concurrent = %s, initially inactive)",
    inactiveQueue.label, tostring(inactiveQueue.concurrent)))

-- while it is inactive its target may still be changed
local okTarget, errTarget = pcall(inactiveQueue.set_target, inactiveQueue, targetQueue)
print("set_target while inactive: " .. (okTarget and "allowed" or tostring(errTarget)))

local activated = false
local ran = dispatch.semaphore(0)
local ranBeforeActivate, sawTarget = nil, nil
inactiveQueue:async(function()
    printCurrentThread("inactiveQueue async task")
    ranBeforeActivate = not activated
    sawTarget = dispatch.get_specific(targetKey) == "target"
    print("task sees the target queue's specific value: " .. tostring(sawTarget))
    ran:signal()
end)
print("task added to the inactive queue; waiting 1 s ...")
local okEarly = ran:wait(scenario.delay(1))
print("task ran during the wait: " .. tostring(okEarly))
activated = true
print("inactiveQueue.activate()")
inactiveQueue:activate()
local okLater = ran:wait(scenario.delay(1) + 5)
scenario.check(okTarget, "set_target is allowed while the queue is inactive")
scenario.check(not okEarly, "the inactive queue runs nothing before activate()")
scenario.check(okLater and ranBeforeActivate == false, "the task runs once the queue is activated")
scenario.check(sawTarget == true, "the task runs through the target queue (sees its specific)")

-- once active, the target can no longer be changed (Swift 3 rule)
local okLate, errLate = pcall(inactiveQueue.set_target, inactiveQueue, dispatch.global())
print("set_target after activate: " .. (okLate and "allowed" or ("error: " .. tostring(errLate))))
scenario.check(not okLate, "set_target on an active queue raises an error")

---------------------------------------------------------------------------------------------
print("\nTarget: two concurrent queues that both target one serial queue")
local queue1 = dispatch.queue{ label = "com.sinkingsoul.DispatchQueueTest.queue1", concurrent = true, target = targetQueue }
local queue2 = dispatch.queue{ label = "com.sinkingsoul.DispatchQueueTest.queue2", concurrent = true, target = targetQueue }
group = dispatch.group()
local running, peak, count = 0, 0, 0
for n = 1, 3 do
    for _, q in ipairs({ queue1, queue2 }) do
        q:async(function()
            running = running + 1
            if running > peak then peak = running end
            count = count + 1
            print(string.format("%s task%d starts (tasks running now: %d)", q.label, n, running))
            dispatch.sleep(scenario.delay(0.2))      -- some work
            running = running - 1
        end, { group = group })
    end
end
group:wait()
print(string.format("%d tasks ran, at most %d at the same time", count, peak))
scenario.check(count == 6, "all tasks of the two queues ran")
scenario.check(peak == 1, "two queues targeting one serial queue never overlap")
