-- Port of swift-corelibs-libdispatch tests/dispatch_suspend_timer.c ("Dispatch Suspend Timer").
-- checks: 7
--
-- Two timers on the main queue: tweedledee ticks every second and counts its runs (i) and its
-- fires (i', the sum of dispatch_source_get_data); tweedledum, due at 3.5 s and then every 3 s,
-- suspends tweedledee at its first run, checks at its second (6.5 s) that tweedledee ran 3
-- times for 3 fires and resumes it, and checks at its third (9.5 s) that tweedledee ran 7 times
-- for 9 fires (the 3 fires missed while suspended are delivered as one run with data 3), then
-- cancels itself; the test ends when tweedledum is finalized.
-- Scaled down: every time is 0.4 of the C test's (tick 0.4 s, tweedledum at 1.4 s and every
-- 1.2 s: about 3.8 s in all). The finalizer is the source being collected (see bsdtests.lua);
-- tweedledee, cancelled at its 10th run after the end, is never finalized in either version.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local scale = 0.4
T.start("Dispatch Suspend Timer")
local main_q = dispatch.main
local i, i_prime, j = 0, 0, 0

local tweedledee = dispatch.source.timer{deadline = 1 * scale, interval = 1 * scale, queue = main_q}
T.ptr_notnull("dispatch_source_timer_create", tweedledee)
tweedledee:set_event_handler(function()
    i_prime = i_prime + tweedledee.data
    i = i + 1
    io.stderr:write(string.format("tweedledee %d (%d)\n", i, i_prime))
    if i == 10 then tweedledee:cancel() end
end)
tweedledee:resume()

local tweedledum = dispatch.source.timer{deadline = 3.5 * scale, interval = 3 * scale, queue = main_q}
T.ptr_notnull("dispatch_source_timer_create", tweedledum)
local watch = T.watch(tweedledum)
tweedledum:set_cancel_handler(function()
    main_q:async(function()
        T.finalized("finalizer ran", watch)
        T.stop()
    end)
end)
tweedledum:set_event_handler(function()
    j = j + 1
    if j == 1 then
        io.stderr:write("suspending timer for 3 seconds (scaled)\n")
        tweedledee:suspend()
    elseif j == 2 then
        io.stderr:write("resuming timer\n")
        T.long("tweedledee tick count", i, 3)
        T.long("tweedledee virtual tick count", i_prime, 3)
        tweedledee:resume()
    else
        T.long("tweedledee tick count", i, 7)
        T.long("tweedledee virtual tick count", i_prime, 9)
        tweedledum:cancel()
    end
end)
tweedledum:resume()
