-- Port of swift-corelibs-libdispatch tests/dispatch_timer_bit63.c ("Dispatch Source Timer, bit 63").
-- checks: 2-3
--
-- A timer on the main queue, due now, with an interval of 0x8000000000000001 ns (bit 63 set,
-- about 292 years) fires once and only once within 1 s: its handler asserts it has not run
-- before (the C test's assert, a check here), and the test ends after 1 s with an added check
-- that it ran exactly once (the C test only prints the count). The runtime clamps the interval
-- (libdispatch aborts on some huge values); the check is that nothing aborts and the timer
-- behaves as a one-shot. 2 checks if the handler has not run within the second (which then
-- fails the last check), 3 otherwise. Not scaled.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

T.start("Dispatch Source Timer, bit 63")
local interval = 0x8000000000000001 -- an integer: math.ult-wise 2^63 + 1, negative in Lua
interval = (2.0 ^ 63 + 1) / 1e9      -- the same number of nanoseconds, as seconds
local mainq = dispatch.main
local i = 0
local ds = dispatch.source.timer{deadline = 0, interval = interval, queue = mainq}
T.ptr_notnull("dispatch_source_create", ds)
ds:set_event_handler(function()
    T.long_less_than("fires only once", i, 1)
    print(i)
    i = i + 1
end)
ds:resume()
mainq:after(1, function()
    T.long("runs in the first second, once", i, 1)
    ds:cancel()
    T.stop()
end)
