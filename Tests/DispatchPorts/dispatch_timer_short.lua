-- Port of swift-corelibs-libdispatch tests/dispatch_timer_short.c ("Dispatch Short Timer").
-- checks: 4
--
-- rdar://problem/7765184 and 7401353: many 5 us timers whose target queue is suspended, in
-- front of a measured 5 us timer on the default global queue. Each of the many timers suspends
-- itself in its registration handler; once all are registered their queue is suspended and they
-- are resumed (so they fire into a suspended queue). The measured timer then counts its handler
-- runs for 1 s and must not have run more often than once per interval (Frequency: 1 <
-- ceil(delay / (count * interval))); it is finalized after its cancel (the finalizer checks
-- its context, here: it is collected).
-- Scaled down: 2,500 timers instead of 25,000 and a 0.5 s measure instead of 1 s. Added: the
-- measured timer ran at least once (the C test divides by its count). The C test's
-- mach_absolute_time progress lines are kept on stderr.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local delay = 0.5
local interval = 5e-6
local N = 2500
local t = {}
local count = 0
local start, last

T.start("Dispatch Short Timer")
local g = dispatch.group()
local q = dispatch.queue("q")

local function test_fin(watch)
    local finalCount = count
    T.long_less_than("ran at least once", 0, finalCount)
    io.stderr:write(string.format("Called back every %d us on average\n", math.floor(delay / math.max(finalCount, 1) * 1e6)))
    T.long_less_than("Frequency", 1, math.ceil(delay / (finalCount * interval)))
    for i = 1, N do t[i]:cancel() end
    q:resume()
    T.finalized("finalizer ran", watch)
    T.stop()
end

-- Add a large number of timers with suspended target queue in front of the timer being
-- measured <rdar://problem/7401353>
for i = 1, N do
    t[i] = dispatch.source.timer{deadline = 0, interval = interval, queue = q}
    g:enter()
    t[i]:set_registration_handler(function()
        t[i]:suspend()
        g:leave()
    end)
    t[i]:resume()
end
-- Wait for registration & configuration of all timers
g:wait()
q:suspend()
for i = 1, N do t[i]:resume() end

local s = dispatch.source.timer{deadline = 0, interval = interval, queue = dispatch.global()}
T.ptr_notnull("dispatch_source_create", s)
local watch = T.watch(s)
s:set_event_handler(function()
    local now = dispatch.now()
    if count == 0 then
        dispatch.global():after(delay, function() s:cancel() end)
        io.stderr:write(string.format("First timer callback  (after %4d ms)\n", math.floor((now - start) * 1000)))
    end
    count = count + 1
    if now - last >= 0.1 then
        io.stderr:write(string.format("%5d timer callbacks (after %4d ms)\n", count, math.floor((now - start) * 1000)))
        last = now
    end
end)
s:set_cancel_handler(function()
    dispatch.main:async(function() test_fin(watch) end)
end)
io.stderr:write(string.format("Scheduling %d us timer\n", math.floor(interval * 1e6)))
start = dispatch.now()
last = start
s:resume()
