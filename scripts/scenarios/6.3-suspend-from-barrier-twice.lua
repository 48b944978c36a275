-- title: Suspend a queue from a barrier task, twice
-- seed: 001 (suspend and resume, case 2: suspend through a barrier task, "Suspend" tapped twice)
-- expect: 4 checks, 3 s of delays
--
-- The first tap queues tasks 1-2, a barrier that suspends the queue, and tasks 3-5: the
-- barrier suspends the queue after tasks 1-2. The second tap's tasks, including its
-- barrier, are all held. One "Resume" is then enough: tap 1's tasks 3-5 and tap 2's tasks
-- 1-2 run, then tap 2's barrier suspends the queue again, and the next "Resume" releases
-- tap 2's tasks 3-5.
-- The buttons are simulated with tasks on the main queue; the simulated user taps 1 s after
-- each "suspended" message.
local dispatch = require("dispatch")
local scenario = require("scenario")

local function printCurrentThread(des, terminator)
    local t = dispatch.thread()
    print(string.format("%s at thread: %s, this is %smain thread%s",
        des, tostring(t), t.is_main and "" or "not ", terminator or ""))
    return t
end

local concurrentQueue = dispatch.queue{ label = "com.concurrentQueue", concurrent = true }

-- bookkeeping for the checks: resumeCalls when each task ran, by "tap.task"
local resumeCalls = 0
local seenAt = {}
local suspensions = 0
local group = dispatch.group()
local onSuspended

local SuspendAndResum = { suspendCount = 0 }

local tap = 0
function SuspendAndResum.suspendQueue()
    tap = tap + 1
    local thisTap = tap
    local function task(n)
        return function()
            printCurrentThread(string.format("concurrentQueue async task%d (tap %d)", n, thisTap))
            seenAt[thisTap .. "." .. n] = resumeCalls
        end
    end
    printCurrentThread("start test")
    concurrentQueue:async(task(1), { group = group })
    concurrentQueue:async(task(2), { group = group })
    -------------------- the replaceable part: suspend through a barrier --------------------
    local barrierTask = dispatch.work_item(function()
        SuspendAndResum.safeSuspend(concurrentQueue)
    end, { barrier = true })
    concurrentQueue:async(barrierTask)
    -------------------------------------------------------------------------------------------
    concurrentQueue:async(task(3), { group = group })
    concurrentQueue:async(task(4), { group = group })
    concurrentQueue:async(task(5), { group = group })
    printCurrentThread("end test")
end

function SuspendAndResum.resumeQueue()
    SuspendAndResum.safeResume(concurrentQueue)
end

function SuspendAndResum.safeSuspend(queue)
    SuspendAndResum.suspendCount = SuspendAndResum.suspendCount + 1
    queue:suspend()
    suspensions = suspensions + 1
    print("The tasks are suspended")
    onSuspended(suspensions)
end

--- safe resume
--- (The count comes down before resume(): a block that resume() lets run may suspend the
--- queue again at once, on another thread, and its safeSuspend must find the count already
--- down. The tutorial brings it down after resume(), which races with that block.)
function SuspendAndResum.safeResume(queue)
    if SuspendAndResum.suspendCount == 1 then
        resumeCalls = resumeCalls + 1
        SuspendAndResum.suspendCount = 0
        queue:resume()
        print("The tasks are resumed")
    elseif SuspendAndResum.suspendCount < 1 then
        print("Resumed too many times")
    else
        resumeCalls = resumeCalls + 1
        SuspendAndResum.suspendCount = SuspendAndResum.suspendCount - 1
        queue:resume()
        print(string.format("Not resumed enough yet, %d more resume(s) needed.",
            SuspendAndResum.suspendCount))
    end
end

local function finalChecks()
    local function all(tapN, from, to, want)
        for n = from, to do
            if seenAt[tapN .. "." .. n] ~= want then return false end
        end
        return true
    end
    scenario.check(all(1, 1, 2, 0), "tap 1: tasks 1-2 run before the barrier suspends the queue")
    scenario.check(all(1, 3, 5, 1) and all(2, 1, 2, 1),
        "the first resume releases tap 1's tasks 3-5 and tap 2's tasks 1-2")
    scenario.check(suspensions == 2, "tap 2's barrier suspends the queue again")
    scenario.check(all(2, 3, 5, 2), "tap 2's tasks 3-5 run only after the second resume")
end

-- the simulated user
onSuspended = function(n)
    if n == 1 then
        dispatch.main:after(scenario.delay(1), function()
            print("\n[Suspend button tapped again]")
            SuspendAndResum.suspendQueue()
            dispatch.main:after(scenario.delay(1), function()
                print("\n[Resume button tapped]")
                SuspendAndResum.resumeQueue()
            end)
        end)
    else
        dispatch.main:after(scenario.delay(1), function()
            print("\n[Resume button tapped again]")
            SuspendAndResum.resumeQueue()
            group:notify(dispatch.main, finalChecks)
        end)
    end
end

print("[Suspend button tapped]")
SuspendAndResum.suspendQueue()
