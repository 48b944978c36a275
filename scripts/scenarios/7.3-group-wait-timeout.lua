-- title: Group wait with a 0.01 s timeout, then more tasks and a second download
-- seed: 000 §7 (example 7.3, group.wait with a short timeout, then more tasks and a download)
-- expect: 3 checks, 1 s of delays
--
-- group.wait(timeout:) blocks for at most the timeout. The first book's download takes
-- about 1 s, so after waiting 0.01 s its print closure finds no data yet. Then two ordinary
-- tasks and the second book's download join the same group; the notification on the main
-- queue prints the second book once everything (including the first download) has ended.
--
-- The downloads come from the scenario runner's loopback HTTP server (fixture JSON under
-- scripts/scenarios/data/http/), which waits about 1 s before answering.
local dispatch = require("dispatch")
local scenario = require("scenario")

local t0 = dispatch.now()
local function date()   -- Date(), with the elapsed time since the start
    return string.format("%s (+%.2f s)", os.date("!%Y-%m-%d %H:%M:%S +0000"), dispatch.now() - t0)
end

-- The tasks and the completion handlers may run at the same time (on the global queue), so
-- everything records its events on a serial queue, one at a time.
local events, eventsQueue = {}, dispatch.queue("events")
local function record(e) eventsQueue:sync(function() events[#events + 1] = e end) end
local printedTags = {}

local BookTags = {}
function BookTags.printBookPreviousFiveTags(data)
    local tags = {}
    for name in data:gmatch('"name"%s*:%s*"([^"]*)"') do
        tags[#tags + 1] = name
        if #tags == 5 then break end
    end
    for _, tag in ipairs(tags) do print(tag) end
    return tags
end

--- URLSession.addDataTask(to:with:completionHandler:): a system task that joins the group
local function addDataTask(group, url, completionHandler)
    group:enter()
    dispatch.http.get(url, dispatch.global(), function(data, status, err)
        print("Download finished: " .. date())
        record("download end")
        completionHandler(data, status, err)
        group:leave()
    end)
end

local function httpGet(url, taskGroup, completion)
    addDataTask(taskGroup, url, completion)
end

local DispatchGroupTest = {}

function DispatchGroupTest.creatAGroup()
    return dispatch.group()
end

--- wait for the group at most `time` seconds
function DispatchGroupTest.wait(group, time)
    local ok, why = group:wait(dispatch.now() + time)
    print(string.format("(group.wait(timeout: 0.01 s) returned: %s)", ok and "success" or why))
    return ok
end

function DispatchGroupTest.addTaskNormally(group, queue)
    queue:async(function()
        print("Task: drink a glass of milk")
        record("milk")
    end, { group = group })

    queue:async(function()
        print("Task: eat an apple")
        record("apple")
    end, { group = group })
end

function DispatchGroupTest.getBookTag(bookID, taskGroup)
    local url = string.format("%s/v2/book/%s/tags?delay=%.3f",
        scenario.http_base(), bookID, scenario.delay(1))
    local printBookTagBlock = function(bookName)
        print("No book information received yet")
        return false
    end

    local completion = function(data, status, err)
        printBookTagBlock = function(bookName)
            if err ~= nil or status ~= 200 then
                print(string.format("error: %s (status %s)", tostring(err), tostring(status)))
                return false
            else
                if data == nil then return false end
                print(string.format("The tags of the book \"%s\":", bookName))
                printedTags[bookID] = BookTags.printBookPreviousFiveTags(data)
                return true
            end
        end
    end

    print(string.format("Task: download the information of book %s %s", bookID, date()))
    httpGet(url, taskGroup, completion)

    return function(bookName)
        return printBookTagBlock(bookName)
    end
end

function DispatchGroupTest.notifyMainQueue(group, closure)
    group:notify(dispatch.main, function()
        print("Group notification: all tasks are done.\n")
        record("notify")
        closure()
    end)
end

-- addSystemTaskToGroupButtonTapped (second version)
local group = DispatchGroupTest.creatAGroup()
local queue = dispatch.global()

local book1ID = "5416832" -- https://book.douban.com/subject/5416832/
local book2ID = "1046265" -- https://book.douban.com/subject/1046265/

-- download book 1, wait at most 0.01 s, then print what we have
local printBookTagBlock1 = DispatchGroupTest.getBookTag(book1ID, group)
DispatchGroupTest.wait(group, scenario.delay(0.01))   -- wait no more than 0.01 s
local firstPrintHadData = printBookTagBlock1("Xinhai: Shaking China")   -- print after the wait

-- ordinary async tasks join the group
DispatchGroupTest.addTaskNormally(group, queue)
-- another download
local printBookTagBlock2 = DispatchGroupTest.getBookTag(book2ID, group)

-- once everything is done, print on the main queue
DispatchGroupTest.notifyMainQueue(group, function()
    local ok2 = printBookTagBlock2("Norwegian Wood")

    local count = {}
    for _, e in ipairs(events) do count[e] = (count[e] or 0) + 1 end
    scenario.check(firstPrintHadData == false, "the first print, after waiting 0.01 s, finds no data yet")
    scenario.check(count["download end"] == 2 and count.milk == 1 and count.apple == 1
        and events[#events] == "notify", "the notification comes after both downloads and both tasks end")
    scenario.check(ok2 and printedTags[book2ID] ~= nil and #printedTags[book2ID] == 5
        and printedTags[book2ID][1] == "Haruki Murakami", "the notification prints the second book's tags")
end)
