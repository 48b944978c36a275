-- Port of test_io_stop of swift-corelibs-libdispatch tests/dispatch_io.c ("Dispatch IO").
-- checks: 2
--
-- rdar://problem/8250057: a one-byte read on a stream channel over an empty pipe is ended by a
-- timer that closes the channel with STOP after 2 s: the read completes with ECANCELED, and
-- the cleanup handler (which closes both ends of the pipe) reports no error.
-- Scaled down: the timer fires after 0.5 s instead of 2 s.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local ECANCELED = 125

T.start("Dispatch IO stop")
dispatch.main:async(function()
    local rfd, wfd = dispatch.fd.pipe()
    local g = dispatch.group()
    g:enter()
    local io = dispatch.io{fd = rfd, type = "stream", queue = dispatch.global(), cleanup = function(err)
        T.errno("create error", err, 0)
        dispatch.fd.close(rfd)
        dispatch.fd.close(wfd)
        g:leave()
    end}
    g:enter()
    io:read(0, 1, dispatch.global(), function(done, _, err)
        if done then
            T.errno("read error", err, ECANCELED)
            g:leave()
        end
    end)
    local t = dispatch.source.timer{deadline = 0.5, queue = dispatch.global()}
    t:set_event_handler(function() io:close{stop = true} end)
    t:resume()
    T.group_wait(g)
    t:cancel()
    T.stop()
end)
