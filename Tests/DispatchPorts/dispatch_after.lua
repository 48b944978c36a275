-- Port of swift-corelibs-libdispatch tests/dispatch_after.c ("Dispatch After").
-- checks: 6
--
-- Three dispatch_after calls on the main queue, each made from the previous one's block: after
-- 6 s, then 2 s, then 0 s, each required to run no earlier than its deadline minus a twelfth of
-- the delay (the C test's 5.5 s for 6 s) and no later than 0.5 s after it.
-- Scaled down: the delays are a quarter of the C test's (1.5 s, 0.5 s, 0 s), with the lower
-- bounds scaled alike and the upper margin kept at 0.5 s (the machine is shared); the final
-- sleep(1) before test_stop is 0.25 s.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local scale = 0.25

local function window(delay)
    local now = dispatch.now()
    return now + delay * (1 - 1 / 12), now + delay, now + delay + 0.5
end

T.start("Dispatch After")
dispatch.main:async(function()
    local a_min, a, a_max = window(6 * scale)
    dispatch.main:after(a, function()
        local now_a = dispatch.now()
        T.long_less_than("can't finish faster than 5.5s (scaled)", 0, now_a - a_min)
        T.long_less_than("must finish faster than  6.5s (scaled)", 0, a_max - now_a)

        local b_min, b, b_max = window(2 * scale)
        dispatch.main:after(b, function()
            local now_b = dispatch.now()
            T.long_less_than("can't finish faster than 1.5s (scaled)", 0, now_b - b_min)
            T.long_less_than("must finish faster than  2.5s (scaled)", 0, b_max - now_b)

            local c_min = dispatch.now()
            local c, c_max = c_min, c_min + 0.5
            dispatch.main:after(c, function()
                local now_c = dispatch.now()
                -- now_c - c_min is >= 0 (not > 0 as in C, whose clock is nanoseconds since boot
                -- and always moves between two reads; Lua numbers of seconds may not).
                T.long_less_than("can't finish faster than 0s", -1e-9, now_c - c_min)
                T.long_less_than("must finish faster than .5s", 0, c_max - now_c)
                dispatch.main:async(function()
                    dispatch.sleep(1 * scale)
                    T.stop()
                end)
            end)
        end)
    end)
end)
