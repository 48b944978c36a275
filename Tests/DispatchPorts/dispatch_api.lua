-- Port of swift-corelibs-libdispatch tests/dispatch_api.c ("Dispatch (Public) API").
-- checks: 2
--
-- The main queue exists, and a block submitted to it runs (the C test ends in that block; here
-- the block also checks that it runs on the main thread, which dispatch_main guarantees in C).
-- Nothing scaled down or left out.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

T.start("Dispatch (Public) API")
local q = dispatch.main
T.ptr_notnull("dispatch_get_main_queue", q)
dispatch.main:async(function()
    T.long("work runs on the main thread", dispatch.thread().is_main, true)
    T.stop()
end)
