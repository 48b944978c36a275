-- title: Group tasks kept in order with a semaphore of 1
-- seed: 001 (GCD Group: "to run the async tasks above in order, add a semaphore")
-- expect: 3 checks, 2.5 s of delays
--
-- Three serial queues each print a run of numbers (0-10, 11-20, 21-30) as group tasks. Each
-- serial queue has a thread of its own, so the three runs go on at the same time and their
-- lines interleave. With a semaphore of value 1, the submitting thread waits before each
-- submission until the previous task has signalled, so the numbers come out strictly in
-- order; the group then notifies the main queue ("ok").
-- (The blog both enters the group and submits with async(group:), as here.)
--
-- Printing a line takes a moment here (a short sleep, as a slow console would). Without it a
-- run of numbers would take a few microseconds, far less than the switch interval, and would
-- nearly always be over before another run could start. The numbers printed are recorded on a
-- serial queue, one at a time, since the runs without the semaphore go on at the same time.
local dispatch = require("dispatch")
local scenario = require("scenario")

local recorder = dispatch.queue("printed")
local function show(printed, name, value)
    print(string.format("%s %d %s", name, value, tostring(dispatch.thread())))
    recorder:sync(function() printed[#printed + 1] = value end)
    dispatch.sleep(scenario.delay(0.05))   -- printing takes a moment
end

-- Where a run of numbers stops following the previous number.
local function switches(printed)
    local n = 0
    for k = 2, #printed do
        if printed[k] ~= printed[k - 1] + 1 then n = n + 1 end
    end
    return n
end

local queue1 = dispatch.queue("com.1")
local queue2 = dispatch.queue("com.2")
local queue3 = dispatch.queue("com.3")

-- 1. Without the semaphore (the blog's second way of joining a group).
local unordered = {}
local group0 = dispatch.group()
queue1:async(function() for i = 0, 10 do show(unordered, "i", i) end end, { group = group0 })
queue2:async(function() for j = 11, 20 do show(unordered, "j", j) end end, { group = group0 })
queue3:async(function() for n = 21, 30 do show(unordered, "n", n) end end, { group = group0 })
group0:wait()
print(string.format("without a semaphore: the printing switched runs %d times\n", switches(unordered)))

-- 2. With the semaphore.
local printed = {}
local starts, ends = {}, {}
local group = dispatch.group()
local semaphore = dispatch.semaphore(1)

semaphore:wait()
group:enter()
queue1:async(function()
    starts[1] = #printed
    for i = 0, 10 do show(printed, "i", i) end
    ends[1] = #printed
    group:leave()
    semaphore:signal()
end, { group = group })

semaphore:wait()
group:enter()
queue2:async(function()
    starts[2] = #printed
    for j = 11, 20 do show(printed, "j", j) end
    ends[2] = #printed
    group:leave()
    semaphore:signal()
end, { group = group })

semaphore:wait()
group:enter()
queue3:async(function()
    starts[3] = #printed
    for n = 21, 30 do show(printed, "n", n) end
    ends[3] = #printed
    group:leave()
    semaphore:signal()
end, { group = group })

group:notify(dispatch.main, function()
    print("ok")
    local inOrder = #printed == 31
    for k = 1, #printed do
        inOrder = inOrder and printed[k] == k - 1
    end
    scenario.check(inOrder, "the numbers are printed strictly in order 0..30")
    scenario.check(starts[2] == ends[1] and starts[3] == ends[2],
        "each run starts only after the previous one has ended")
    scenario.check(#printed == 31 and ends[3] == 31, "the group notifies after all three runs")
end)
