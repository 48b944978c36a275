-- title: Suspend a queue from a barrier task, resume safely with a counter
-- seed: 000 §6 (suspend and resume: SuspendAndResum with safeSuspend/safeResume)
-- expect: 5 checks, 2 s of delays
--
-- suspend() holds the tasks that have not started yet; resume() must be called as many
-- times as suspend(), and one resume too many is an error. The tutorial keeps a counter
-- (safeSuspend/safeResume) so that the extra resume is only reported.
-- Here a barrier task suspends the concurrent queue after tasks 1-2; tasks 3-5 wait for
-- the "Resume" button; a second tap on "Resume" is reported as one too many.
-- The buttons of the sample app are simulated: each tap is a task on the main queue, the
-- first "Resume" tap comes 1 s after the queue reports it is suspended.
local dispatch = require("dispatch")
local scenario = require("scenario")

local function printCurrentThread(des, terminator)
    local t = dispatch.thread()
    print(string.format("%s at thread: %s, this is %smain thread%s",
        des, tostring(t), t.is_main and "" or "not ", terminator or ""))
    return t
end

local concurrentQueue = dispatch.queue{
    label = "com.sinkingsoul.DispatchQueueTest.concurrentQueue", concurrent = true }

-- bookkeeping for the checks
local resumedOnce = false
local early, late = {}, {}        -- task numbers run before / after the resume
local bookkeeping = dispatch.queue("bookkeeping")   -- tasks that run at the same time record here
local group = dispatch.group()
local tooMany = false
local onSuspended                 -- the simulated user reacts to "suspended"

--- Suspend and resume test class
local SuspendAndResum = { suspendCount = 0 }   -- how many times the queue was suspended

function SuspendAndResum.task(n)
    return function()
        printCurrentThread("concurrentQueue async task" .. n)
        local list = resumedOnce and late or early
        bookkeeping:sync(function() list[#list + 1] = n end)
    end
end

--- suspend test
function SuspendAndResum.suspendQueue()
    printCurrentThread("start test")
    concurrentQueue:async(SuspendAndResum.task(1), { group = group })
    concurrentQueue:async(SuspendAndResum.task(2), { group = group })

    -- suspend through a barrier task
    local barrierTask = dispatch.work_item(function()
        SuspendAndResum.safeSuspend(concurrentQueue)
    end, { barrier = true })
    concurrentQueue:async(barrierTask)

    concurrentQueue:async(SuspendAndResum.task(3), { group = group })
    concurrentQueue:async(SuspendAndResum.task(4), { group = group })
    concurrentQueue:async(SuspendAndResum.task(5), { group = group })
    printCurrentThread("end test")
end

--- resume test
function SuspendAndResum.resumeQueue()
    SuspendAndResum.safeResume(concurrentQueue)
end

--- safe suspend
function SuspendAndResum.safeSuspend(queue)
    SuspendAndResum.suspendCount = SuspendAndResum.suspendCount + 1
    queue:suspend()
    print("The tasks are suspended")
    if onSuspended then onSuspended() end
end

--- safe resume
--- (The count comes down before resume(): a block that resume() lets run may suspend the
--- queue again at once, on another thread, and its safeSuspend must find the count already
--- down. The tutorial brings it down after resume(), which races with that block.)
function SuspendAndResum.safeResume(queue)
    if SuspendAndResum.suspendCount == 1 then
        resumedOnce = true
        SuspendAndResum.suspendCount = 0
        queue:resume()
        print("The tasks are resumed")
    elseif SuspendAndResum.suspendCount < 1 then
        print("Resumed too many times")
        tooMany = true
    else
        SuspendAndResum.suspendCount = SuspendAndResum.suspendCount - 1
        queue:resume()
        print(string.format("Not resumed enough yet, %d more resume(s) needed.",
            SuspendAndResum.suspendCount))
    end
end

-- The simulated user: taps "Suspend" now, "Resume" 1 s after the queue is suspended,
-- then "Resume" once more 1 s later.
onSuspended = function()
    dispatch.main:after(scenario.delay(1), function()
        print("\n[Resume button tapped]")
        SuspendAndResum.resumeQueue()
        dispatch.main:after(scenario.delay(1), function()
            print("\n[Resume button tapped again]")
            SuspendAndResum.resumeQueue()

            -- what the counter protects against: a bare resume() of a queue that is not
            -- suspended (libdispatch aborts the process; the Lua runtime raises an error)
            local ok, err = pcall(concurrentQueue.resume, concurrentQueue)
            print("a bare concurrentQueue.resume() now: " .. (ok and "accepted" or ("error: " .. tostring(err))))

            local allDone = group:wait(5)
            table.sort(early); table.sort(late)
            print("tasks run before the resume: " .. table.concat(early, ", "))
            print("tasks run after the resume: " .. table.concat(late, ", "))
            scenario.check(allDone and #early + #late == 5, "all five tasks ran")
            scenario.check(table.concat(early, ",") == "1,2", "tasks 1-2 run before the queue is suspended")
            scenario.check(table.concat(late, ",") == "3,4,5", "tasks 3-5 run only after the resume")
            scenario.check(tooMany, "one resume too many is reported by the counter")
            scenario.check(not ok, "a bare extra resume raises an error instead of crashing")
        end)
    end)
end

print("[Suspend button tapped]")
SuspendAndResum.suspendQueue()
