-- Port of swift-corelibs-libdispatch tests/dispatch_sync_on_main.c ("Dispatch Sync on main").
-- checks: 10
--
-- rdar://problem/7181849: while a block keeps reposting itself to the main queue every 0.1 s
-- (a timer made of dispatch_after), a serial queue makes ten dispatch_sync calls onto the main
-- queue, 50 ms apart; each runs on the main thread (pthread_main_np), and the last one makes
-- the reposting block end the test. The main thread runs the CLI's main-queue loop (the C
-- test's CFRunLoopRun). Nothing scaled down.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local final = 10
local global_count = 0
local INT_MAX = 0x7fffffff

local function work()
    if global_count == INT_MAX then T.stop() end
    global_count = global_count + 1
    print(string.format("Firing timer on main %d", global_count))
    dispatch.main:after(0.1, work)
end

T.start("Dispatch Sync on main")
local dq = dispatch.queue("foo.bar")
dq:async(function()
    dispatch.main:async(work)
    for i = 0, final - 1 do
        dispatch.main:sync(function()
            print(string.format("Calling sync %d", i))
            T.long("sync on main", dispatch.thread().is_main, true)
            if i == final - 1 then global_count = INT_MAX end
        end)
        dispatch.sleep(0.05)
    end
end)
dq = nil
