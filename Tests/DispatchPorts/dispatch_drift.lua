-- Port of swift-corelibs-libdispatch tests/dispatch_drift.c ("Dispatch Timer Drift").
-- checks: 2
--
-- A 100 Hz timer on the main queue: the jitter of each run (its ideal time, counted from the
-- first run, minus now) changes by less than ACCEPTABLE_DRIFT per run on average, i.e. the
-- timer keeps to its schedule instead of accumulating lateness.
-- Scaled down: 3 s (300 runs) instead of 25 s. The bound is the C test's LENIENT_DEADLINES one
-- (0.1 s per run), which upstream's CMake sets for every test built for Swift's CI "to reduce
-- probability of test failures due to machine load"; the strict 1 ms is for an idle machine.
-- Times are monotonic (the C test reads gettimeofday). The per-run line is printed every 50 runs.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local count = 0
local last_jitter = 0
local drift_sum = 0
local interval = 1 / 100      -- 100 times a second
local target = math.floor(3.0 / interval + 0.5)
local first = 0

T.start("Dispatch Timer Drift")
local t = dispatch.source.timer{deadline = interval, interval = interval, queue = dispatch.main}
T.ptr_notnull("dispatch_source_create", t)
t:set_event_handler(function()
    local now = dispatch.now().seconds
    if count == 0 then
        -- Because this is taken at 1st timer fire, later jitter values may be negative.
        -- This doesn't affect the drift calculation.
        first = now
    end
    local goal = first + interval * count
    local jitter = goal - now
    local drift = jitter - last_jitter
    drift_sum = drift_sum + drift
    if count % 50 == 0 then print(string.format("%4d: jitter %f, drift %f", count, jitter, drift)) end
    count = count + 1
    if target <= count then
        drift_sum = math.abs(drift_sum / (count - 1))
        T.double_less_than("drift", drift_sum, 0.1)
        print(string.format("mean drift %.6f s per run (strict bound 0.001)", drift_sum))
        t:cancel()
        T.stop()
    end
    last_jitter = jitter
end)
t:resume()
