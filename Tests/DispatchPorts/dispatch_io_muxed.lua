-- Port of swift-corelibs-libdispatch tests/dispatch_io_muxed.c ("Dispatch IO Muxed").
-- checks: 5
--
-- A read source and a write source on the same descriptor both fire and cancel: on a regular
-- file (always readable and writable), and on the server end of a loopback TCP connection,
-- where the write source fires at once and the read source only once the client has written
-- 512 bytes, 0.5 s later. Sockets come from dispatch.net (listen, connect, accept).
-- Left out: Windows' duplex named pipe. Scaled down: the write comes after 0.25 s instead of
-- 0.5 s.
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

local function test_stream_muxed(serverfd, clientfd)
    local g = dispatch.group()
    g:enter()
    g:enter()
    local reader = dispatch.source.read{fd = serverfd, queue = dispatch.global()}
    T.ptr_notnull("dispatch_source_create", reader)
    reader:set_event_handler(function() reader:cancel() end)
    reader:set_cancel_handler(function() g:leave() end)
    local writer = dispatch.source.write{fd = serverfd, queue = dispatch.global()}
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

local function test_socket_muxed()
    print("\nSocket Muxed")
    local net = dispatch.net
    local listenfd, port = assert(net.listen{host = "127.0.0.1", port = 0, backlog = 3})
    local connected = dispatch.semaphore(0)
    local clientfd
    net.connect({host = "127.0.0.1", port = port}, dispatch.global(), function(fd, err)
        clientfd = assert(fd, err)
        connected:signal()
    end)
    connected:wait()
    local serverfd
    repeat
        serverfd = net.accept(listenfd)
        if not serverfd then dispatch.sleep(0.001) end
    until serverfd
    test_stream_muxed(serverfd, clientfd)
    dispatch.fd.close(clientfd)
    dispatch.fd.close(serverfd)
    dispatch.fd.close(listenfd)
end

T.start("Dispatch IO Muxed")
dispatch.main:async(function()
    test_file_muxed()
    test_socket_muxed()
    T.stop()
end)
