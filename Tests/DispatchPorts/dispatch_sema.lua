-- Port of swift-corelibs-libdispatch tests/dispatch_sema.c ("Dispatch Semaphore").
-- checks: 1
--
-- 10,000 iterations of dispatch_apply on the default global queue each take a semaphore of
-- value 1, increment a shared total and signal it: the total must be exact. dispatch_apply is
-- dispatch.concurrent_perform (which always runs on the global queues). Nothing scaled down.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local LAPS = 10000
T.start("Dispatch Semaphore")

local total = 0
local dsema = dispatch.semaphore(1)
dispatch.concurrent_perform(LAPS, function()
    dsema:wait()
    total = total + 1
    dsema:signal()
end)
dsema = nil

T.long("count", total, LAPS)
T.stop()
