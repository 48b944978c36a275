-- title: The five questions on queues and tasks
-- seed: 000 appendix "Questions" (queue and task properties), answered with 000 §2-3
-- expect: 9 checks, 0.5 s of delays
--
-- The tutorial ends with five questions:
--   1. Can the main queue only use the main thread?
--   2. Can a serial queue use several threads? Several at the same time?
--   3. Does submitting a sync task to the main queue deadlock?
--   4. Does submitting a sync task to a serial queue deadlock?
--   5. Does submitting a sync task to a concurrent queue deadlock?
-- Each answer is shown by running it. Where Swift would deadlock (and crash), the Lua
-- runtime raises an error naming the queue instead; it is caught with pcall and printed.
--
-- Everything runs from one "driver" task on its own serial queue, one step after the other
-- (with blocking sync/wait calls), so that the main thread stays free to run main-queue tasks.
local dispatch = require("dispatch")
local scenario = require("scenario")

local function printCurrentThread(des, terminator)
    local t = dispatch.thread()
    print(string.format("%s at thread: %s, this is %smain thread%s",
        des, tostring(t), t.is_main and "" or "not ", terminator or ""))
    return t
end

local serialQueue = dispatch.queue("com.sinkingsoul.DispatchQueueTest.serialQueue")
local concurrentQueue = dispatch.queue{
    label = "com.sinkingsoul.DispatchQueueTest.concurrentQueue", concurrent = true }
local mainQueue = dispatch.main

local function isDeadlockError(ok, err, queue)
    if ok or type(err) ~= "string" then return false end
    if err:find(queue.label, 1, true) then return true end
    -- the main queue may be named in words rather than by its label
    return queue == mainQueue and err:find("main queue", 1, true) ~= nil
end

local driver = dispatch.queue("com.sinkingsoul.DispatchQueueTest.questions")
driver:async(function()
    ---------------------------------------------------------------------------------------
    print("\nQuestion 1: can the main queue only use the main thread?")
    local t1 = mainQueue:sync(function()
        return printCurrentThread("main queue sync task (submitted from a background thread)")
    end)
    local done = dispatch.semaphore(0)
    local t2
    mainQueue:async(function()
        t2 = printCurrentThread("main queue async task")
        done:signal()
    end)
    done:wait()
    print("Answer: yes. Main-queue tasks always run on the main thread, even a sync task")
    print("submitted from another thread (which blocks that thread, not the main thread).")
    scenario.check(t1.is_main and t2.is_main, "Q1: main-queue tasks run on the main thread")

    ---------------------------------------------------------------------------------------
    print("\nQuestion 2: can a serial queue use several threads? several at the same time?")
    local syncThread = mainQueue:sync(function()
        return serialQueue:sync(function()
            return printCurrentThread("serialQueue sync task (submitted from the main thread)")
        end)
    end)
    local group = dispatch.group()
    local running, peak = 0, 0
    local threads = {}
    for n = 1, 4 do
        serialQueue:async(function()
            running = running + 1
            if running > peak then peak = running end
            local t = printCurrentThread("serialQueue async task" .. n)
            threads[#threads + 1] = t.number
            dispatch.sleep(scenario.delay(0.1))   -- some work, letting others run if they could
            running = running - 1
        end, { group = group })
    end
    group:wait()
    local otherThread = false
    for _, n in ipairs(threads) do
        if n ~= syncThread.number then otherThread = true end
    end
    print(string.format("Answer: yes, over time (main thread for the sync task, worker thread(s) "
        .. "for async tasks), but never at the same time: at most %d task ran at once.", peak))
    scenario.check(syncThread.is_main and otherThread, "Q2: one serial queue used several threads")
    scenario.check(peak == 1, "Q2: a serial queue never runs two tasks at the same time")

    ---------------------------------------------------------------------------------------
    print("\nQuestion 3: does a sync task submitted to the main queue deadlock?")
    local fromMain = mainQueue:sync(function()
        -- we are now on the main thread, running a main-queue task: DispatchQueue.main.sync
        local ok, err = pcall(mainQueue.sync, mainQueue, function() print("never printed") end)
        print("from the main thread: " .. (ok and "ran" or ("deadlock reported: " .. tostring(err))))
        return { ok = ok, err = err }
    end)
    local fromBackground = mainQueue:sync(function() return "ran" end)
    print("from a background thread: " .. fromBackground .. " (see question 1)")
    print("Answer: yes when submitted from the main thread (Swift crashes there);")
    print("no when submitted from another thread.")
    scenario.check(isDeadlockError(fromMain.ok, fromMain.err, mainQueue),
        "Q3: main.sync from the main thread is reported as a deadlock naming the main queue")
    scenario.check(fromBackground == "ran", "Q3: main.sync from another thread runs")

    ---------------------------------------------------------------------------------------
    print("\nQuestion 4: does a sync task submitted to a serial queue deadlock?")
    local outside = serialQueue:sync(function() return "ran" end)
    print("from outside the queue: " .. outside .. " (example 3.1)")
    local nested = serialQueue:sync(function()
        local ok, err = pcall(serialQueue.sync, serialQueue, function() print("never printed") end)
        print("from a task of the same queue: " .. (ok and "ran" or ("deadlock reported: " .. tostring(err))))
        return { ok = ok, err = err }
    end)
    -- the same holds through a target chain: a queue whose target is serialQueue
    local child = dispatch.queue{ label = "com.sinkingsoul.DispatchQueueTest.childQueue", target = serialQueue }
    local viaTarget = serialQueue:sync(function()
        local ok, err = pcall(child.sync, child, function() print("never printed") end)
        print("to a queue that targets it, from a task of it: "
            .. (ok and "ran" or ("deadlock reported: " .. tostring(err))))
        return { ok = ok, err = err }
    end)
    print("Answer: only when the sync task is submitted from a task running on that same serial")
    print("queue (example 3.2), directly or through a queue that targets it.")
    scenario.check(outside == "ran", "Q4: a sync task from outside the serial queue runs")
    scenario.check(isDeadlockError(nested.ok, nested.err, serialQueue),
        "Q4: a nested sync on the same serial queue is reported as a deadlock naming it")
    scenario.check(not viaTarget.ok, "Q4: a nested sync through the target chain is reported too")

    ---------------------------------------------------------------------------------------
    print("\nQuestion 5: does a sync task submitted to a concurrent queue deadlock?")
    local ok5, res5 = pcall(concurrentQueue.sync, concurrentQueue, function()
        return concurrentQueue:sync(function()
            printCurrentThread("nested concurrentQueue sync task")
            return "ran"
        end)
    end)
    print("nested in a task of the same concurrent queue: " .. (ok5 and tostring(res5) or tostring(res5)))
    print("Answer: no (example 3.3): the nested task runs on the current thread.")
    scenario.check(ok5 and res5 == "ran", "Q5: a nested sync on a concurrent queue runs, no deadlock")
end)
