-- Port of swift-corelibs-libdispatch tests/dispatch_io_pipe_close.c.
-- checks: 3
--
-- A stream channel on a pipe's read end (low water 0) reads until "end"; one byte is written;
-- when it arrives the handler closes the write end and, shortly after, the channel; the
-- channel's cleanup handler must then run (closing the read end), which ends the test. The C
-- test has no check besides reaching the cleanup handler (the suite's 5 s timeout); this port
-- checks the byte that arrived, that the cleanup reports no error, and that the cleanup ran
-- within 5 s. Nothing scaled down.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

T.start("Dispatch IO pipe close")
local readFD, writeFD = dispatch.fd.pipe()
print(string.format("readFD=%d, writeFD=%d", readFD, writeFD))
local q = dispatch.queue("q")
local started = dispatch.now()
local io
io = dispatch.io{fd = readFD, type = "stream", queue = q, cleanup = function(err)
    print(string.format("cleanup, err=%d", err))
    T.errno("cleanup error", err, 0)
    dispatch.fd.close(readFD)
    print("all done")
    T.long_less_than("cleanup within the C suite's 5 s timeout", dispatch.now() - started, 5)
    T.stop()
end}
io:set_limit{low = 0}
local seen = false
io:read(0, math.huge, q, function(done, data, err)
    print(string.format("read: %s, %d, %d", tostring(done), #data, err))
    if #data > 0 and not seen then
        -- will only happen once
        seen = true
        T.long("byte read", data:bytes(), "x")
        print("closing writeFD")
        dispatch.fd.close(writeFD)
        q:after(1e-9, function() io:close() end)
    end
end)
print("writing")
dispatch.fd.write(writeFD, "x")
print("written")
