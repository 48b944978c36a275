-- title: DispatchSource: watch a directory for writes
-- seed: 000 §8 (DispatchSourceTest: makeFileSystemObjectSource on a directory, eventMask .write)
-- expect: 3 checks, 0.5 s of work
--
-- A file-system source watches a directory; its event handler runs on a global queue
-- whenever the directory is written (a file created, renamed or removed in it). The script
-- writes a file into the watched directory three times, the way the tutorial's
-- changeFile() does (String.write(toFile:atomically:true): write a temporary file, then
-- rename it), and waits after each write until "File was changed" has been printed.
-- The tutorial watches NSTemporaryDirectory(); here a private temporary directory is used
-- and removed at the end. (On Linux the runtime builds this source on inotify.)
local dispatch = require("dispatch")
local scenario = require("scenario")

local writesToMake = 3

--- DispatchSourceTest
local DispatchSourceTest = {
    filePath = scenario.tmpdir(),
    counter = 0,
    queue = dispatch.global(),
}

-- bookkeeping for the checks
local seenWrite = 0                 -- the latest write (counter) the handler has seen
local changed = dispatch.semaphore(0)
local handlerRuns = 0
local cancelled = dispatch.semaphore(0)
local source

function DispatchSourceTest.startObserve(closure)
    source = dispatch.source.file{
        path = DispatchSourceTest.filePath,
        events = { "write" },
        queue = DispatchSourceTest.queue,
    }
    source:set_event_handler(closure)
    source:set_cancel_handler(function()
        -- the tutorial closes the directory's descriptor here
        print("Stopped watching " .. DispatchSourceTest.filePath)
        cancelled:signal()
    end)
    source:resume()
end

local function fileExists(path)
    local f = io.open(path, "r")
    if f then f:close() return true end
    return false
end

function DispatchSourceTest.createFile(name, filePath)
    local file = filePath .. "/" .. name
    print("File: file://" .. file)

    -- write "hello world"
    if not fileExists(file) then
        local f = io.open(file, "w")
        local createSuccess = f ~= nil
        if f then f:write("hello world") f:close() end
        print("File creation result: " .. tostring(createSuccess))
    end
end

function DispatchSourceTest.changeFile()
    DispatchSourceTest.createFile("DispatchSourceTest.md", DispatchSourceTest.filePath)
    DispatchSourceTest.counter = DispatchSourceTest.counter + 1
    local text = tostring(DispatchSourceTest.counter)
    -- text.write(toFile:atomically: true): write a temporary file, then rename it over the file
    local path = DispatchSourceTest.filePath .. "/DispatchSourceTest.md"
    local tmp = path .. ".tmp"
    local f = assert(io.open(tmp, "w"))
    f:write(text)
    f:close()
    assert(os.rename(tmp, path))
    print("file written.")
end

-- init()
DispatchSourceTest.startObserve(function()
    handlerRuns = handlerRuns + 1
    seenWrite = DispatchSourceTest.counter
    local events = source.data
    print("File was changed" .. (type(events) == "table" and #events > 0
        and (" (" .. table.concat(events, ", ") .. ")") or ""))
    changed:signal()
end)

local allSeen = true
for _ = 1, writesToMake do
    DispatchSourceTest.changeFile()
    -- wait (at most 5 s) until the handler has seen this write
    local deadline = dispatch.now() + 5
    while seenWrite < DispatchSourceTest.counter and dispatch.now() < deadline do
        changed:wait(deadline)
    end
    if seenWrite < DispatchSourceTest.counter then
        allSeen = false
        print("(no event for write " .. DispatchSourceTest.counter .. ")")
    end
end

source:cancel()
local cancelOk = cancelled:wait(5)

scenario.check(allSeen, "\"File was changed\" is printed after each write the script makes")
scenario.check(handlerRuns >= writesToMake, "the handler ran at least once per write")
scenario.check(cancelOk, "the cancel handler runs after cancel()")
scenario.rmtree(DispatchSourceTest.filePath)
