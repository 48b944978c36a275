-- title: Group enter/leave around a system API: two book-tag downloads
-- seed: 000 §7 (example 7.2, add system tasks to a group: URLSession dataTask with enter/leave)
-- expect: 4 checks, 1 s of delays
--
-- A task started by a system API (here an HTTP GET; URLSession in the tutorial) is not
-- submitted to one of our queues, so it joins the group with enter() before it starts
-- and leave() in its completion handler. Both downloads start at once; when both have
-- ended, the notification on the main queue prints the first five tags of each book.
--
-- The tutorial downloads from api.douban.com. Here the scenario runner serves the same kind
-- of JSON from a loopback HTTP server (scripts/scenarios/data/http/), and the server waits
-- about 1 s before answering, like the real network did.
local dispatch = require("dispatch")
local scenario = require("scenario")

local t0 = dispatch.now()
local function date()   -- Date(), with the elapsed time since the start
    return string.format("%s (+%.2f s)", os.date("!%Y-%m-%d %H:%M:%S +0000"), dispatch.now() - t0)
end

-- The two completion handlers may run at the same time (on the global queue), so everything
-- records its events on a serial queue, one at a time.
local events, eventsQueue = {}, dispatch.queue("events")
local function record(e) eventsQueue:sync(function() events[#events + 1] = e end) end
local printedTags = {}

--- BookTags.printBookPreviousFiveTags: print the first five tags of a book tag JSON document
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
    group:enter()   -- enter the group
    dispatch.http.get(url, dispatch.global(), function(data, status, err)
        print("Download finished: " .. date())
        record("end")
        completionHandler(data, status, err)
        group:leave()   -- leave the group
    end)
end

--- httpGet(url:in:completion:): a GET request added to the group
local function httpGet(url, taskGroup, completion)
    addDataTask(taskGroup, url, completion)
end

local DispatchGroupTest = {}

function DispatchGroupTest.creatAGroup()
    return dispatch.group()
end

--- Download the tags of a book by its ID; return a closure that prints its first five
--- tags. The download joins the given group.
function DispatchGroupTest.getBookTag(bookID, taskGroup)
    local url = string.format("%s/v2/book/%s/tags?delay=%.3f",
        scenario.http_base(), bookID, scenario.delay(1))
    local printBookTagBlock = function(bookName)
        print("No book information received yet")
        return false
    end

    -- the task that runs once the network request has ended
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
    record("start")
    -- get the data from the network
    httpGet(url, taskGroup, completion)

    return function(bookName)
        return printBookTagBlock(bookName)
    end
end

--- notify the main queue once the tasks of the group are done, then run a closure
function DispatchGroupTest.notifyMainQueue(group, closure)
    group:notify(dispatch.main, function()
        print("Group notification: all tasks are done.\n")
        record("notify")
        closure()
    end)
end

-- addSystemTaskToGroupButtonTapped
local group = DispatchGroupTest.creatAGroup()

local book1ID = "5416832" -- https://book.douban.com/subject/5416832/
local book2ID = "1046265" -- https://book.douban.com/subject/1046265/

-- download the tags of each book; each call returns a closure printing its first 5 tags
local printBookTagBlock1 = DispatchGroupTest.getBookTag(book1ID, group)
local printBookTagBlock2 = DispatchGroupTest.getBookTag(book2ID, group)

-- once the downloads are done, print on the main queue
DispatchGroupTest.notifyMainQueue(group, function()
    local ok1 = printBookTagBlock1("Xinhai: Shaking China")
    print()
    local ok2 = printBookTagBlock2("Norwegian Wood")

    scenario.check(table.concat(events, ",") == "start,start,end,end,notify",
        "both downloads start before either ends; the notification comes after both end")
    scenario.check(ok1 and ok2, "both books' tags are printed")
    scenario.check(printedTags[book1ID] ~= nil and #printedTags[book1ID] == 5
        and printedTags[book1ID][1] == "history", "the first five tags of book 1 are printed")
    scenario.check(printedTags[book2ID] ~= nil and #printedTags[book2ID] == 5
        and printedTags[book2ID][1] == "Haruki Murakami", "the first five tags of book 2 are printed")
end)
