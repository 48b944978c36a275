-- Port of swift-corelibs-libdispatch tests/dispatch_timer_timeout.c ("Dispatch Source Timeout").
-- checks: 2
--
-- rdar://problem/8015967: a 100 ns repeating timer whose handler suspends its own serial queue
-- at its first run must not keep a second timer (due in 1 s, every 2 s, on the default global
-- queue) from firing: after a wait the second timer has changed the value, and the fast timer
-- ran exactly once. Scaled down: the second timer is due in 0.25 s and the main thread waits
-- 1.5 s (the C test's 1 s and 6 s).
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

T.start("Dispatch Source Timeout")
local mini_interval = 100e-9 -- 100 ns
local long_interval = 2      -- 2 secs
local timer_queue = dispatch.queue("timer_queue")
local value_to_be_changed = 5
local fired = 0

local mini_timer = dispatch.source.timer{deadline = 0, interval = mini_interval, queue = timer_queue}
mini_timer:set_event_handler(function()
    fired = fired + 1
    print("Firing mini-timer " .. fired)
    print("Suspending mini-timer queue")
    timer_queue:suspend()
end)

local long_timer
long_timer = dispatch.source.timer{deadline = 0.25, interval = long_interval, queue = dispatch.global()}
long_timer:set_event_handler(function()
    print("Firing long timer")
    value_to_be_changed = 10
    long_timer:cancel()
end)

mini_timer:resume()
long_timer:resume()

dispatch.sleep(1.5)

T.long("Checking final value", value_to_be_changed, 10)
T.long("Mini-timer fired", fired, 1)
mini_timer:cancel()
timer_queue:resume()
T.stop()
