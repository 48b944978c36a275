-- Port of swift-corelibs-libdispatch tests/dispatch_timer.c ("Dispatch Source Timer").
-- checks: 10-11
--
-- Five one-shot timers on the default global queue, due at j s + 0.1 s (j = 1..5), and a
-- repeating 1 s timer on the main queue that cancels itself at its third run (about 2 s): the
-- test ends when that timer is finalized, so timers 3 to 5 must not have run by then (their
-- handlers check j < 3 while the test is running; timer 2, due 0.1 s after the end, may or may
-- not run before it, hence 10 or 11 checks). The repeating timer is set to one-shot before
-- its cancel, as in C; its cancel handler runs; and it is finalized: with its handlers gone it
-- is collected (a source whose handlers refer to it is not kept alive by them).
-- Adapted: dispatch_release in a one-shot timer's handler is a cancel (the runtime keeps a
-- resumed source until it is cancelled); the finalizer is the source being collected (see
-- bsdtests.lua). Not scaled: the 0.1 s margins are the test.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local finalized = false

local function test_timer()
    T.start("Dispatch Source Timer")
    local stop_at = 3
    local main_q = dispatch.main

    -- create timers in two classes: ones that should trigger before the test ends, and ones
    -- that shouldn't trigger before the test ends
    for j = 1, 5 do
        local s = dispatch.source.timer{deadline = j + 0.1, queue = dispatch.global()}
        T.ptr_notnull("dispatch_source_create", s)
        s:set_event_handler(function()
            if not finalized then
                T.long_less_than("timer number", j, stop_at)
                io.stderr:write(string.format("timer[%d]\n", j))
            end
            s:cancel()
        end)
        s:resume()
    end

    local i = 0
    local s = dispatch.source.timer{deadline = 0, interval = 1, queue = main_q}
    T.ptr_notnull("dispatch_source_create", s)
    local watch = T.watch(s)
    s:set_cancel_handler(function()
        T.ptr_notnull("cancel handler run", s)
        main_q:async(function()
            T.finalized("finalizer ran", watch)
            finalized = true
            T.stop()
        end)
    end)
    s:set_event_handler(function()
        i = i + 1
        io.stderr:write(i .. "\n")
        if i >= stop_at then
            T.long("i", i, stop_at)
            s:schedule{deadline = 0}
            s:cancel()
        end
    end)
    s:resume()
end

test_timer()
