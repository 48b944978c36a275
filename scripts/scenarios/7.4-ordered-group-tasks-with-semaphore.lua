-- title: Group tasks kept in order with a semaphore of 1
-- seed: 001 (GCD Group: "to run the async tasks above in order, add a semaphore")
--
-- Three serial queues each print a run of numbers (0-10, 11-20, 21-30) as group tasks.
-- Without more, the three runs interleave. With a semaphore of value 1, the submitting
-- thread waits before each submission until the previous task has signalled, so the
-- numbers come out strictly in order; the group then notifies the main queue ("ok").
-- (The blog both enters the group and submits with async(group:), as here.)
local dispatch = require("dispatch")
local scenario = require("scenario")

local printed = {}
local function show(name, value)
    print(string.format("%s %d %s", name, value, tostring(dispatch.thread())))
    printed[#printed + 1] = value
end

local group = dispatch.group()
local queue1 = dispatch.queue("com.1")
local queue2 = dispatch.queue("com.2")
local queue3 = dispatch.queue("com.3")
local semaphore = dispatch.semaphore(1)

semaphore:wait()
group:enter()
queue1:async(function()
    for i = 0, 10 do show("i", i) end
    group:leave()
    semaphore:signal()
end, { group = group })

semaphore:wait()
group:enter()
queue2:async(function()
    for j = 11, 20 do show("j", j) end
    group:leave()
    semaphore:signal()
end, { group = group })

semaphore:wait()
group:enter()
queue3:async(function()
    for n = 21, 30 do show("n", n) end
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
end)
