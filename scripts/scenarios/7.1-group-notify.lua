-- title: Group of two tasks, notify the main queue
-- seed: 000 §7 (example 7.1, create a group, add tasks normally, notify the main queue)
-- expect: 3 checks
--
-- Two tasks are added to a group with async(group:); group.notify runs a task on the main
-- queue once both are done. Dispatch promises no order between the two tasks: they run at the
-- same time on the global queue, either may print first, and their lines may interleave. So
-- they record what they did on a serial queue, one at a time.
local dispatch = require("dispatch")
local scenario = require("scenario")

local events, eventsQueue = {}, dispatch.queue("events")
local function record(e) eventsQueue:sync(function() events[#events + 1] = e end) end

--- Group test class
local DispatchGroupTest = {}

--- create a new group
function DispatchGroupTest.creatAGroup()
    return dispatch.group()
end

--- tell the main queue that the tasks of the group are all done
function DispatchGroupTest.notifyMainQueue(group)
    group:notify(dispatch.main, function()
        print("Group notification: all tasks are done.\n")
        record("notify")
        local milk, apple, notify
        for i, e in ipairs(events) do
            if e == "milk" then milk = i elseif e == "apple" then apple = i elseif e == "notify" then notify = i end
        end
        scenario.check(milk ~= nil and apple ~= nil, "both tasks ran")
        scenario.check(milk ~= nil and apple ~= nil and notify > milk and notify > apple,
            "the notification comes after both tasks")
        scenario.check(dispatch.thread().is_main, "the notification runs on the main thread")
    end)
end

--- add ordinary async tasks to the group
function DispatchGroupTest.addTaskNormally(group, queue)
    queue:async(function()
        print("Task: drink a glass of milk\n")
        record("milk")
    end, { group = group })

    queue:async(function()
        print("Task: eat an apple\n")
        record("apple")
    end, { group = group })
end

-- creatTaskGroupButtonTapped
local group = DispatchGroupTest.creatAGroup()
local queue = dispatch.global()

DispatchGroupTest.addTaskNormally(group, queue)
DispatchGroupTest.notifyMainQueue(group)
