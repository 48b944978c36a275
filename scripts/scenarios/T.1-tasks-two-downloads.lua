-- title: Tasks: the two book-tag downloads of 7.2 as straight-line code
-- seed: 000 §7 (example 7.2, add system tasks to a group: URLSession dataTask with enter/leave), rewritten with tasks
-- expect: 5 checks, 1 s of delays
--
-- The same two downloads as scenario 7.2, without a group, enter/leave or a completion
-- handler: each download is a task, dispatch.await turns the callback of dispatch.http.get
-- into a plain call, and the task on the main queue waits for both with t:wait(). None of the
-- waits holds a thread: while a task waits, its step has ended and its queue is free. Both
-- downloads start at once and end about 1 s later, as in 7.2.
--
-- Like 7.2, the downloads go to a loopback HTTP server run by the scenario runner
-- (scripts/scenarios/data/http/), which waits about 1 s before answering.
local dispatch = require("dispatch")
local scenario = require("scenario")

local t0 = dispatch.now()
local function date()   -- Date(), with the elapsed time since the start
    return string.format("%s (+%.2f s)", os.date("!%Y-%m-%d %H:%M:%S +0000"), dispatch.now() - t0)
end

-- The two download tasks run at the same time (on the default global queue), so events are
-- recorded on a serial queue, one at a time.
local events, eventsQueue = {}, dispatch.queue("events")
local function record(e) eventsQueue:sync(function() events[#events + 1] = e end) end
local mainQueueLog = {}

--- BookTags.printBookPreviousFiveTags: print the first five tags of a book tag JSON document
local function firstFiveTags(data)
    local tags = {}
    for name in data:gmatch('"name"%s*:%s*"([^"]*)"') do
        tags[#tags + 1] = name
        if #tags == 5 then break end
    end
    return tags
end

--- A GET request as a plain call: returns body, status, error once the response is in.
local function httpGet(url)
    return dispatch.await(function(resume)
        dispatch.http.get(url, dispatch.global(), resume)
    end)
end

--- Download the tags of a book by its ID, as a task; the task's result is the first five tags.
local function getBookTag(bookID)
    local url = string.format("%s/v2/book/%s/tags?delay=%.3f",
        scenario.http_base(), bookID, scenario.delay(1))
    return dispatch.task(function()
        print(string.format("Task: download the information of book %s %s", bookID, date()))
        record("start")
        local data, status, err = httpGet(url)   -- the task waits here, holding no thread
        print("Download finished: " .. date())
        record("end")
        if err ~= nil or status ~= 200 or data == nil then
            error(string.format("download of book %s failed: %s (status %s)", bookID, tostring(err), tostring(status)))
        end
        return firstFiveTags(data)
    end)
end

local function printTags(bookName, tags)
    print(string.format("The tags of the book \"%s\":", bookName))
    for _, tag in ipairs(tags) do print(tag) end
end

local book1ID = "5416832" -- https://book.douban.com/subject/5416832/
local book2ID = "1046265" -- https://book.douban.com/subject/1046265/

-- One task on the main queue runs the whole story, top to bottom.
dispatch.task(function()
    local download1 = getBookTag(book1ID)
    local download2 = getBookTag(book2ID)

    -- wait for both: the main queue stays free meanwhile
    dispatch.main:async(function() mainQueueLog[#mainQueueLog + 1] = "main queue free" end)
    local ok1, tags1 = download1:wait()
    local ok2, tags2 = download2:wait()
    print("Both downloads are done.\n")
    record("both done")

    printTags("Xinhai: Shaking China", tags1)
    print()
    printTags("Norwegian Wood", tags2)

    scenario.check(dispatch.in_task() and dispatch.current_label() == dispatch.main.label,
        "the story runs as a task on the main queue")
    scenario.check(table.concat(events, ",") == "start,start,end,end,both done",
        "both downloads start before either ends; the waits end after both")
    scenario.check(mainQueueLog[1] == "main queue free",
        "the main queue runs other blocks while the task waits")
    scenario.check(ok1 and ok2 and #tags1 == 5 and tags1[1] == "history",
        "the first five tags of book 1 are printed")
    scenario.check(#tags2 == 5 and tags2[1] == "Haruki Murakami",
        "the first five tags of book 2 are printed")
end, dispatch.main)
