-- title: concurrentPerform: multiples of 13 in 1..100
-- seed: 000 §3 (example 3.9, iteration task with concurrentPerform)
--
-- From a global queue, concurrentPerform checks each number of 1..100 for divisibility
-- by 13. Each match is appended to the result array by an async task on the main queue
-- (so only the main thread touches the array). When the iterations are over, a sync task
-- on the main queue prints the result: it runs after every append queued before it.
local dispatch = require("dispatch")
local scenario = require("scenario")

local function printCurrentThread(des, terminator)
    local t = dispatch.thread()
    print(string.format("%s at thread: %s, this is %smain thread%s",
        des, tostring(t), t.is_main and "" or "not ", terminator or ""))
    return t
end

local mainQueue = dispatch.main
local globalQueue = dispatch.global()
local mainQueueKey = dispatch.specific_key("mainQueueKey")
mainQueue:set_specific(mainQueueKey, "main")

local events = {}
local appendsOnMain = true

-- concurrentPerformTask()
printCurrentThread("start test")

--- Is a number divisible by another one?
local function isDividedExactlyBy(divisor, number)
    return number % divisor == 0
end

local array = {}
for i = 1, 100 do array[i] = i end
local result = {}

globalQueue:async(function()
    -- loop over the array with concurrentPerform (indexes are 1-based in Lua)
    print("concurrentPerform task start--->")
    dispatch.concurrent_perform(100, function(index)
        if isDividedExactlyBy(13, array[index]) then
            printCurrentThread("find a match: " .. array[index])
            mainQueue:async(function()
                appendsOnMain = appendsOnMain and dispatch.thread().is_main
                    and dispatch.get_specific(mainQueueKey) == "main"
                result[#result + 1] = array[index]
            end)
        end
    end)
    print("---->concurrentPerform task over")
    events[#events + 1] = "over"
    -- done: update the result on the main thread
    mainQueue:sync(function()
        print("back to main thread")
        local items = {}
        for i, v in ipairs(result) do items[i] = tostring(v) end
        print(string.format("result: find %d number - [%s]", #result, table.concat(items, ", ")))
        events[#events + 1] = "result"

        local sorted = { table.unpack(result) }
        table.sort(sorted)
        local expected = { 13, 26, 39, 52, 65, 78, 91 }
        scenario.check(#sorted == 7 and table.concat(sorted, ",") == table.concat(expected, ","),
            "exactly 7 results: 13, 26, 39, 52, 65, 78, 91")
        scenario.check(appendsOnMain, "every result was gathered on the main queue (main thread)")
        scenario.check(dispatch.thread().is_main, "the result is printed on the main thread")
        scenario.check(events[1] == "over" and events[2] == "result",
            "the result is printed after \"over\"")
    end)
end)
printCurrentThread("end test")
