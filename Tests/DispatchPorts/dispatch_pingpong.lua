-- Port of swift-corelibs-libdispatch tests/dispatch_pingpong.c ("Dispatch Ping Pong").
-- checks: 4
--
-- Two serial queues pass a counter back and forth: each block submits the next one to the other
-- queue with dispatch_group_async, until the counter reaches `final`; the group then empties and
-- the last counter is checked. Scaled down: 100,000 hops instead of 1,000,000 (the suite's time
-- budget). The C test's three test_ptr_notnull checks of the created objects are kept.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local final = 100000
local count = 0

T.start("Dispatch Ping Pong")
local ping = dispatch.queue("ping")
T.ptr_notnull("dispatch_queue_create(ping)", ping)
local pong = dispatch.queue("pong")
T.ptr_notnull("dispatch_queue_create(pong)", pong)
local group = dispatch.group()
T.ptr_notnull("dispatch_group_create", group)

local function pingpongloop(g, a, b, counter)
    if counter < final then
        b:async(function() pingpongloop(g, b, a, counter + 1) end, {group = g})
    else
        count = counter
    end
end

pingpongloop(group, ping, pong, 0)
group:wait()

T.long("count", count, final)
T.stop()
