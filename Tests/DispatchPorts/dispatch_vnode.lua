-- Port of swift-corelibs-libdispatch tests/dispatch_vnode.c ("Dispatch VNODE RENAME").
-- checks: 1
--
-- 1,000 times: a file-system source watches a file for DISPATCH_VNODE_RENAME (registration
-- awaited with a registration handler and a group), the file is renamed, and the rename must
-- be reported within 10 ms (a semaphore wait); then the source is cancelled and the file renamed
-- back on the next round. Every rename must be seen. The C test's progress characters
-- ("." for seen, "!" for missed) are printed to stderr.
-- Adapted: DISPATCH_SOURCE_TYPE_VNODE is dispatch.source.file (inotify on Linux) watching the
-- path for "rename"; it opens what it watches itself (the C test opens the file O_EVTONLY and
-- closes it in the cancel handler). Scaled down: 200 rounds instead of 1,000. The 10 ms wait for
-- each notification is 2 s: a notification that is late on a loaded machine is not a lost one
-- (a run next to other builds, load average 9, once missed a 100 ms window).
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local ITERATIONS = 200
local iterations, notifications = 0, 0

T.start("Dispatch VNODE RENAME")
local path1 = os.tmpname()
local path2 = os.tmpname()
os.remove(path2)
local currentName, renameDest = path1, path2
local renamedSemaphore = dispatch.semaphore(0)
local g = dispatch.group()
while iterations < ITERATIONS do
    iterations = iterations + 1
    local monitorSource = assert(dispatch.source.file{path = currentName, events = {"rename"}, queue = dispatch.global()})
    monitorSource:set_event_handler(function() renamedSemaphore:signal() end)
    g:enter()
    monitorSource:set_registration_handler(function() g:leave() end)
    monitorSource:resume()
    g:wait()
    assert(os.rename(currentName, renameDest))
    currentName, renameDest = renameDest, currentName
    if renamedSemaphore:wait(2) then
        io.stderr:write(".")
        notifications = notifications + 1
        monitorSource:cancel()
    else
        io.stderr:write("!")
        monitorSource:cancel()
        renamedSemaphore:signal()
    end
    if iterations % 80 == 0 then io.stderr:write("\n") end
end
io.stderr:write("\n")
os.remove(currentName)
T.long("VNODE RENAME notifications", notifications, ITERATIONS)
T.stop()
