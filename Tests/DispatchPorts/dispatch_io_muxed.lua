-- Port of swift-corelibs-libdispatch tests/dispatch_io_muxed.c ("Dispatch IO Muxed").
-- checks: 5
--
-- A read source and a write source on the same descriptor both fire and cancel: on a regular
-- file (always readable and writable), and on a connected stream, where the read source can
-- only fire once the peer has written 512 bytes, 0.5 s later.
-- Adapted: the C test's stream is a loopback TCP connection, and this API has no sockets yet
-- (dispatch.net, still to come); the stream case runs on a pipe instead, with the read source on
-- its read end and the write source on its write end (a pipe is one-way, so the two sources
-- cannot share one descriptor as they do on a socket): the write source fires at once, the read
-- source only after the write. Windows' duplex named pipe is left out. Scaled down: the write
-- comes after 0.25 s instead of 0.5 s.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local function test_file_muxed()
    print("\nFile Muxed")
    local path = os.tmpname()
    local fd = assert(dispatch.fd.open(path, "w+"))
    os.remove(path)
    dispatch.fd.write(fd, "test")
    local g = dispatch.group()
    g:enter()
    g:enter()
    local reader = dispatch.source.read{fd = fd, queue = dispatch.global()}
    T.ptr_notnull("dispatch_source_create", reader)
    reader:set_event_handler(function() reader:cancel() end)
    reader:set_cancel_handler(function() g:leave() end)
    local writer = dispatch.source.write{fd = fd, queue = dispatch.global()}
    T.ptr_notnull("dispatch_source_create", writer)
    writer:set_event_handler(function() writer:cancel() end)
    writer:set_cancel_handler(function() g:leave() end)
    reader:resume()
    writer:resume()
    T.group_wait(g)
    dispatch.fd.close(fd)
end

local function test_stream_muxed(serverfd_read, serverfd_write, clientfd)
    local g = dispatch.group()
    g:enter()
    g:enter()
    local reader = dispatch.source.read{fd = serverfd_read, queue = dispatch.global()}
    T.ptr_notnull("dispatch_source_create", reader)
    reader:set_event_handler(function() reader:cancel() end)
    reader:set_cancel_handler(function() g:leave() end)
    local writer = dispatch.source.write{fd = serverfd_write, queue = dispatch.global()}
    T.ptr_notnull("dispatch_source_create", writer)
    writer:set_event_handler(function() writer:cancel() end)
    writer:set_cancel_handler(function() g:leave() end)
    reader:resume()
    writer:resume()
    dispatch.global():after(0.25, function()
        g:enter()
        local n = dispatch.fd.write(clientfd, string.rep("\0", 512))
        T.sizet("num written", n, 512)
        g:leave()
    end)
    T.group_wait(g)
end

local function test_pipe_muxed()
    print("\nPipe Muxed (the C test's Socket Muxed, on a pipe)")
    local r, w = dispatch.fd.pipe()
    test_stream_muxed(r, w, w)
    dispatch.fd.close(r)
    dispatch.fd.close(w)
end

T.start("Dispatch IO Muxed")
dispatch.main:async(function()
    test_file_muxed()
    test_pipe_muxed()
    T.stop()
end)
