-- Port of swift-corelibs-libdispatch tests/dispatch_proc.c ("Dispatch Proc").
-- checks: 24
--
-- Five process sources watch one child (sleep) for DISPATCH_PROC_EXIT; each fires once with
-- the exit flag and cancels itself, and after a pause in which extra events would be noticed
-- the child has exited cleanly and the event count is 5. A second round (rdar://problem/8090801)
-- watches the pid of the first child, which no longer exists.
-- Adapted: the child is started by a shell in the background (its pid comes back on a pipe),
-- not suspended with POSIX_SPAWN_START_SUSPENDED: it sleeps 0.5 s instead of 2 s, time enough
-- for the sources to register. It is not our child, so instead of waitpid its clean exit is
-- the shell's report, written to a file when it ends. In the second round the watched pid no
-- longer exists (or is a zombie, depending on who reaps it): as with libdispatch on Darwin, the
-- sources report the exit at once, so the count is 5 again. Scaled down: the pause is 0.5 s
-- instead of 5 s.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local PID_CNT = 5
local event_cnt

local function spawn(status_file)
    local p = assert(io.popen(string.format("(sleep 0.5; echo $? >'%s') >/dev/null 2>&1 & echo $!", status_file)))
    local pid = tonumber(p:read("l"))
    p:close()
    return pid
end

local test_proc
function test_proc(bad_pid)
    event_cnt = T.counter()
    local status_file = os.tmpname()
    local pid = spawn(status_file)
    local group = dispatch.group()
    local monitor_pid = bad_pid or pid
    local proc_s = {}
    for i = 1, PID_CNT do
        local proc = dispatch.source.process{pid = monitor_pid, events = {"exit"}, queue = dispatch.global()}
        T.ptr_notnull("dispatch_source_proc_create", proc)
        if proc then
            group:enter()
            proc_s[i] = proc
            proc:set_event_handler(function()
                local flags = table.concat(proc.data, ",")
                T.long("DISPATCH_PROC_EXIT", flags, "exit")
                event_cnt:add(1)
                proc:cancel()
            end)
            proc:set_cancel_handler(function() group:leave() end)
            proc:resume()
        end
    end
    if not group:wait(10) then
        for i = 1, PID_CNT do if proc_s[i] then proc_s[i]:cancel() end end
        group:wait()
    end
    -- delay to give a chance for any bugs that result in too many events to be noticed
    dispatch.main:after(0.5, function()
        local deadline = dispatch.now() + 10
        local status
        repeat
            local f = io.open(status_file, "r")
            status = f and f:read("l")
            if f then f:close() end
            if not status or status == "" then dispatch.sleep(0.01) end
        until (status and status ~= "") or dispatch.now() > deadline
        os.remove(status_file)
        T.long("Sub-process exited", status, "0")
        T.long("Event count", event_cnt:get(), PID_CNT)
        if bad_pid then
            T.stop()
        else
            dispatch.main:async(function() test_proc(pid) end)
        end
    end)
end

T.start("Dispatch Proc")
test_proc(nil)
