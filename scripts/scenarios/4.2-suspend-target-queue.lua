-- title: Suspending a target queue holds the queues that target it
-- seed: 000 §4 (target queue: "if the target queue is blocked, every queue targeting it is blocked")
-- expect: 2 checks, 1 s of delays
--
-- Custom queues group tasks: their tasks really run on the target queue. So suspending the
-- target queue holds the tasks of every queue that targets it, without touching the
-- system queues.
local dispatch = require("dispatch")
local scenario = require("scenario")

local function printCurrentThread(des, terminator)
    local t = dispatch.thread()
    print(string.format("%s at thread: %s, this is %smain thread%s",
        des, tostring(t), t.is_main and "" or "not ", terminator or ""))
    return t
end

local targetQueue = dispatch.queue("com.sinkingsoul.DispatchQueueTest.targetQueue")
local serialChild = dispatch.queue{
    label = "com.sinkingsoul.DispatchQueueTest.serialChild", target = targetQueue }
local concurrentChild = dispatch.queue{
    label = "com.sinkingsoul.DispatchQueueTest.concurrentChild", concurrent = true, target = targetQueue }

local resumed = false
local ranWhileSuspended = 0
local ran = 0
local group = dispatch.group()

targetQueue:suspend()
print("target queue suspended")

for n = 1, 3 do
    for _, q in ipairs({ serialChild, concurrentChild }) do
        q:async(function()
            ran = ran + 1
            if not resumed then ranWhileSuspended = ranWhileSuspended + 1 end
            printCurrentThread(q.label .. " task" .. n)
        end, { group = group })
    end
end
print("3 tasks added to each child queue; waiting 1 s ...")

local finished = group:wait(scenario.delay(1))
print(string.format("tasks run while the target is suspended: %d (group done: %s)", ran, tostring(finished)))

resumed = true
print("target queue resumed")
targetQueue:resume()
local ok = group:wait(scenario.delay(1) + 5)
print(string.format("tasks run after resume: %d", ran))

scenario.check(not finished and ranWhileSuspended == 0,
    "nothing from the child queues runs while the target is suspended")
scenario.check(ok and ran == 6, "all child tasks run once the target is resumed")
