-- title: Suspend a queue from a sync task, twice (the main thread blocks)
-- seed: 001 (suspend and resume, case 3: suspend through a sync task, "Suspend" tapped twice)
-- expect: 6 checks, 4 s of delays
--
-- The first tap suspends the concurrent queue from a sync task: "123", the suspension,
-- "456". At the second tap the queue is still suspended, so the main thread's sync task
-- cannot start and the main thread blocks: in the app nothing responds any more ("123"
-- is the last line; "456" never comes).
-- Here a timer on a background queue plays the user's way out: 2 s later it resumes the
-- queue from another thread. The held tasks and the sync task then run, the sync task
-- suspends the queue again, the main thread goes on ("456"), and one more "Resume" tap
-- releases the rest, so that the script ends.
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
local rescued = false
local blockedFor
local timerStart, syncReturnedAt
local after456 = {}         -- for each tap: was "456" printed after the rescue?
local seenRescued = {}      -- "tap.task" -> rescued when the task ran
local finalResume = false
local seenFinal = {}
local group = dispatch.group()

local SuspendAndResum = { suspendCount = 0 }

local tap = 0
function SuspendAndResum.suspendQueue()
    tap = tap + 1
    local thisTap = tap
    local function task(n)
        return function()
            printCurrentThread(string.format("concurrentQueue async task%d (tap %d)", n, thisTap))
            seenRescued[thisTap .. "." .. n] = rescued
            seenFinal[thisTap .. "." .. n] = finalResume
        end
    end
    printCurrentThread("start test")
    concurrentQueue:async(task(1), { group = group })
    concurrentQueue:async(task(2), { group = group })
    -------------------- the replaceable part: suspend through a sync task --------------------
    print("123")
    local t0 = dispatch.now()
    concurrentQueue:sync(function()
        SuspendAndResum.safeSuspend(concurrentQueue)
    end)
    if thisTap == 2 then
        syncReturnedAt = dispatch.now()
        blockedFor = syncReturnedAt - t0
        print(string.format("(the main thread was blocked in sync for %.2f s)", blockedFor))
    end
    print("456")
    after456[thisTap] = rescued
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
    print("The tasks are suspended")
end

--- safe resume
--- (The count comes down before resume(): a block that resume() lets run may suspend the
--- queue again at once, on another thread, and its safeSuspend must find the count already
--- down. The tutorial brings it down after resume(), which races with that block.)
function SuspendAndResum.safeResume(queue)
    if SuspendAndResum.suspendCount == 1 then
        SuspendAndResum.suspendCount = 0
        queue:resume()
        print("The tasks are resumed")
    elseif SuspendAndResum.suspendCount < 1 then
        print("Resumed too many times")
    else
        SuspendAndResum.suspendCount = SuspendAndResum.suspendCount - 1
        queue:resume()
        print(string.format("Not resumed enough yet, %d more resume(s) needed.",
            SuspendAndResum.suspendCount))
    end
end

local function finalChecks()
    scenario.check(after456[1] == false, "tap 1: the sync task suspends the queue and \"456\" follows at once")
    -- The timer fires 2 s after it starts, never earlier; sync returns only after that.
    scenario.check(syncReturnedAt ~= nil and syncReturnedAt - timerStart >= scenario.delay(2),
        "tap 2: the main thread blocks in sync on the suspended queue until the timer resumes it")
    scenario.check(after456[2] == true, "tap 2: \"456\" is printed only after the rescue")
    local ok = true
    for n = 3, 5 do ok = ok and seenRescued["1." .. n] == true end
    scenario.check(ok, "tap 1's tasks 3-5 are held until the queue is resumed")
    ok = true
    for n = 3, 5 do ok = ok and seenFinal["2." .. n] == true end
    scenario.check(ok, "tap 2's tasks 3-5 are held by the second suspension until the last resume")
    scenario.check(SuspendAndResum.suspendCount == 0, "the queue ends resumed")
end

-- the simulated user
print("[Suspend button tapped]")
SuspendAndResum.suspendQueue()

dispatch.main:after(scenario.delay(1), function()
    print("\n[Suspend button tapped again]")
    -- the way out: a timer on a background queue resumes the queue 2 s later
    local timer
    timerStart = dispatch.now()
    timer = dispatch.source.timer{
        deadline = scenario.delay(2),
        queue = dispatch.global(),
        handler = function()
            timer:cancel()
            print("\n[timer, 2 s later, on a background thread: the main thread is still blocked;"
                .. " resuming the queue from here]")
            rescued = true
            SuspendAndResum.resumeQueue()
        end,
    }
    timer:resume()
    SuspendAndResum.suspendQueue()   -- blocks the main thread in concurrentQueue.sync

    -- the sync task suspended the queue again: tap "Resume" once more
    dispatch.main:after(scenario.delay(1), function()
        print("\n[Resume button tapped]")
        finalResume = true
        SuspendAndResum.resumeQueue()
        group:notify(dispatch.main, finalChecks)
    end)
end)
