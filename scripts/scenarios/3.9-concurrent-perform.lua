-- title: concurrentPerform: multiples of 13 in 1..100
-- seed: 000 §3 (example 3.9, iteration task with concurrentPerform)
-- expect: 4 checks, 0.1 s of delays
--
-- From a global queue, concurrentPerform checks each number of 1..100 for divisibility
-- by 13. Each match is appended to the result array by an async task on the main queue
-- (so only the main thread touches the array). When the iterations are over, a sync task
-- on the main queue prints the result: it runs after every append queued before it.
--
-- Printing a match takes a moment here (a short sleep, as a slow console would), and other
-- iterations run on other threads meanwhile: as in the tutorial, the matches, and so the
-- result, come in an order that varies from run to run. (Iterations as short as these, a few
-- instructions each, would otherwise mostly end in index order: the thread that runs one
-- usually takes the next one too.) Iterations run at the same time and may interleave at any
-- instruction, so the count of finished iterations is kept on a serial queue.
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

local appendsOnMain = true
local finished = 0          -- iterations that have returned
local finishedQueue = dispatch.queue("finished")   -- counts them one at a time

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
            dispatch.sleep(scenario.delay(0.01))    -- printing takes a moment
            printCurrentThread("find a match: " .. array[index])
            mainQueue:async(function()
                appendsOnMain = appendsOnMain and dispatch.thread().is_main
                    and dispatch.get_specific(mainQueueKey) == "main"
                result[#result + 1] = array[index]
            end)
        end
        finishedQueue:sync(function() finished = finished + 1 end)
    end)
    print("---->concurrentPerform task over")
    -- done: update the result on the main thread
    mainQueue:sync(function()
        print("back to main thread")
        local items = {}
        for i, v in ipairs(result) do items[i] = tostring(v) end
        print(string.format("result: find %d number - [%s]", #result, table.concat(items, ", ")))

        local sorted = { table.unpack(result) }
        table.sort(sorted)
        local expected = { 13, 26, 39, 52, 65, 78, 91 }
        scenario.check(#sorted == 7 and table.concat(sorted, ",") == table.concat(expected, ","),
            "exactly 7 results: 13, 26, 39, 52, 65, 78, 91")
        scenario.check(appendsOnMain, "every result was gathered on the main queue (main thread)")
        scenario.check(dispatch.thread().is_main, "the result is printed on the main thread")
        scenario.check(finished == 100, "the result is printed after all 100 iterations have returned")
    end)
end)
printCurrentThread("end test")
