-- title: Suspend a queue directly, twice
-- seed: 001 (suspend and resume, case 1: safeSuspend called directly, "Suspend" tapped twice)
-- expect: 3 checks, 3 s of delays
--
-- Suspensions are counted. The "Suspend" button is tapped twice, and each tap suspends the
-- concurrent queue directly (no barrier). The first "Resume" tap only brings the count
-- down to 1 ("one more resume needed"); every held task runs after the second one.
-- The buttons are simulated with tasks on the main queue, one tap per second.
local dispatch = require("dispatch")
local scenario = require("scenario")

local function printCurrentThread(des, terminator)
    local t = dispatch.thread()
    print(string.format("%s at thread: %s, this is %smain thread%s",
        des, tostring(t), t.is_main and "" or "not ", terminator or ""))
    return t
end

local concurrentQueue = dispatch.queue{ label = "com.concurrentQueue", concurrent = true }

-- bookkeeping for the checks
local resumeCalls = 0     -- queue:resume() calls made so far
local ranEarly = {}       -- held tasks that ran before the second resume (should stay empty)
local ranLate = 0
local bookkeeping = dispatch.queue("bookkeeping")   -- tasks that run at the same time count here
local group = dispatch.group()

--- Suspend and resume test class
local SuspendAndResum = { suspendCount = 0 }   -- how many times the queue was suspended

local tap = 0
function SuspendAndResum.suspendQueue()
    tap = tap + 1
    local thisTap = tap
    local function task(n)
        return function()
            printCurrentThread("concurrentQueue async task" .. n)
            -- tap 1's tasks 1-2 were queued before the first suspend: they may already run
            if not (thisTap == 1 and n <= 2) then
                local early = resumeCalls < 2
                bookkeeping:sync(function()
                    if early then ranEarly[#ranEarly + 1] = thisTap .. "." .. n
                    else ranLate = ranLate + 1 end
                end)
            end
        end
    end
    printCurrentThread("start test")
    concurrentQueue:async(task(1), { group = group })
    concurrentQueue:async(task(2), { group = group })
    -------------------- the replaceable part: suspend directly --------------------
    SuspendAndResum.safeSuspend(concurrentQueue)
    ---------------------------------------------------------------------------------
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
    print("The tasks are suspended")
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

-- the simulated user
print("[Suspend button tapped]")
SuspendAndResum.suspendQueue()

dispatch.main:after(scenario.delay(1), function()
    print("\n[Suspend button tapped again]")
    SuspendAndResum.suspendQueue()
end)

dispatch.main:after(scenario.delay(2), function()
    print("\n[Resume button tapped]")
    SuspendAndResum.resumeQueue()
end)

dispatch.main:after(scenario.delay(3), function()
    print("\n[Resume button tapped again]")
    SuspendAndResum.resumeQueue()
    group:notify(dispatch.main, function()
        scenario.check(#ranEarly == 0, "no held task runs before the second resume"
            .. (#ranEarly > 0 and (" (ran: " .. table.concat(ranEarly, " ") .. ")") or ""))
        scenario.check(ranLate == 8, "all held tasks run after the second resume")
        scenario.check(resumeCalls == 2 and SuspendAndResum.suspendCount == 0,
            "two resumes were needed for two suspends")
    end)
end)
