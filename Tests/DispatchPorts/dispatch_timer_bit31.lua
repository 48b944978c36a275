-- Port of swift-corelibs-libdispatch tests/dispatch_timer_bit31.c ("Dispatch Source Timer, bit 31").
-- checks: 3
--
-- A timer on the main queue due in 0x80000000 ns (2.147 s, bit 31 set) with that interval
-- cancels itself at its first run; its cancel handler must come after 2 s and before 4 s (a
-- deadline whose bit 31 were mishandled would fire at once or far too late). The C test
-- compares whole seconds of gettimeofday; this port compares elapsed monotonic seconds with the
-- same bounds (> 1 s whole, i.e. at least 2 s, and < 4 s). Not scaled: the bit is the test.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

T.start("Dispatch Source Timer, bit 31")
local main_q = dispatch.main
local t = 0x80000000 / 1e9
local s = dispatch.source.timer{deadline = t, interval = t, queue = main_q}
T.ptr_notnull("dispatch_source_create", s)
local start_time = dispatch.now()
s:set_event_handler(function() s:cancel() end)
s:set_cancel_handler(function()
    local elapsed = dispatch.now() - start_time
    -- check, s/b 2.0799... seconds, which is <4 seconds when it could end on a bad boundary
    T.long_less_than("needs to finish faster than 4 seconds", elapsed, 4)
    -- And it has to take at least two seconds...
    T.long_less_than("can't finish faster than 2 seconds", 2, elapsed + 1e-9)
    T.stop()
end)
s:resume()
