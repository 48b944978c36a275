-- Port of swift-corelibs-libdispatch tests/dispatch_timer_set_time.c ("Dispatch Update Timer").
-- checks: 2
--
-- A 1 s repeating timer on the main queue is rescheduled from its first handler to fire now and
-- every 0.1 s; after 15 runs it cancels itself, and its cancel handler checks the whole run
-- took less than 10 s (fifteen 1 s ticks would blow past it): rescheduling from a handler takes
-- effect. Scaled down: all times are a quarter (0.25 s, then every 25 ms, bound 2.5 s).
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local scale = 0.25
T.start("Dispatch Update Timer")
local main_q = dispatch.main
local i = 0
local start_time = dispatch.now()
local s = dispatch.source.timer{deadline = 1 * scale, interval = 1 * scale, queue = main_q}
T.ptr_notnull("dispatch_source_create", s)
s:set_cancel_handler(function()
    -- Make sure we actually managed to adjust the interval duration.
    T.long_less_than("total duration", dispatch.now() - start_time, 10 * scale)
    T.stop()
end)
s:set_event_handler(function()
    i = i + 1
    io.stderr:write(i .. "\n")
    if i >= 15 then
        s:cancel()
    elseif i == 1 then
        s:schedule{deadline = 0, interval = 0.1 * scale}
    end
end)
s:resume()
