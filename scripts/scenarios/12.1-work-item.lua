-- title: Work item: perform, notify x3, cancel
-- seed: 000 §12 (example 12.1, DispatchWorkItemTest.workItemTest)
-- expect: 6 checks, 2.5 s of delays
--
-- One work item (value += 5) is submitted to a global queue and also performed directly
-- by another task, which then cancels it. Three notifications are registered: they run
-- once the item has completed, in no promised order (the tutorial's run shows 2, 3, 1). A
-- third task, 2 s later, performs the item again: it is cancelled, so nothing
-- happens. The value goes 10 -> 15 -> 20 and stays 20.
--
-- As in the tutorial's output, the two runs of the item may overlap: printing its last line
-- takes a moment here (a short sleep), and the other run goes on meanwhile on another thread.
-- Two runs at once may interleave at any instruction, so the value they share is updated on a
-- serial queue (the tutorial's `value += 5` races in the same way). The last line says whether
-- the runs overlapped in this run.
local dispatch = require("dispatch")
local scenario = require("scenario")

-- bookkeeping for the checks
local values = {}            -- value after each run of the item
local notifies = {}
local done = dispatch.group()
local inside, overlapped = 0, false

-- workItemTest()
local value = 10
local valueQueue = dispatch.queue("value")   -- the runs' shared state, one change at a time
local workItem = dispatch.work_item(function()
    print("workItem running start.---->")
    local now = valueQueue:sync(function()
        inside = inside + 1
        if inside > 1 then overlapped = true end
        value = value + 5
        values[#values + 1] = value
        return value
    end)
    print("value = " .. now)
    dispatch.sleep(scenario.delay(0.1))   -- printing takes a moment
    print("---->workItem running end.")
    valueQueue:sync(function() inside = inside - 1 end)
end)
local queue = dispatch.global()

-- The notifications are registered before the item is submitted (the tutorial registers them
-- after both runs have started): code of the main chunk and of the blocks may interleave at any
-- instruction, so both runs could otherwise end first, and a work item that ran twice takes no
-- notification. They may run at the same time: what they record goes through the serial queue.
for n = 1, 3 do
    done:enter()
    workItem:notify(queue, function()
        local seen = valueQueue:sync(function()
            notifies[#notifies + 1] = { n = n, value = value }
            return value
        end)
        print(string.format("notify %d: value = %d", n, seen))
        done:leave()
    end)
end

queue:async(workItem, { group = done })

local cancelledBefore
queue:async(function()
    print("async perform of workItem")
    workItem:perform()
    cancelledBefore = workItem:is_cancelled()
    print("task 2 cancelled?: " .. tostring(cancelledBefore))
    workItem:cancel()
    print("async perform of workItem end")
end, { group = done })

local cancelledAfter
queue:async(function()
    print("async perform 2 of workItem")
    dispatch.sleep(scenario.delay(2))
    cancelledAfter = workItem:is_cancelled()
    print("task 3 cancelled?: " .. tostring(cancelledAfter))
    workItem:perform()
    print("async perform 2 of workItem end")
end, { group = done })

done:notify(dispatch.main, function()
    print(overlapped and "(this run: the two runs of the item overlapped)"
        or "(this run: the two runs of the item did not overlap)")
    local notifiedValuesOk = true
    for _, note in ipairs(notifies) do
        notifiedValuesOk = notifiedValuesOk and note.value >= 15
    end
    scenario.check(table.concat(values, ",") == "15,20" and value == 20, "value goes 10 -> 15 -> 20")
    scenario.check(#notifies == 3, "three notifications run")
    scenario.check(notifiedValuesOk, "the notifications run after the item's first completion")
    scenario.check(cancelledBefore == false, "the item is not cancelled before cancel()")
    scenario.check(cancelledAfter == true, "the item reports cancelled after cancel()")
    scenario.check(#values == 2, "the perform after cancel does nothing")
end)
