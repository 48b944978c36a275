-- Port of swift-corelibs-libdispatch tests/dispatch_io_pipe.c ("Dispatch IO Pipe").
-- checks: 36
--
-- On anonymous pipes, each with the other end acted on at once ("Immediate") or 0.5 s later by
-- a timer ("Delayed"): a read source sees 512 bytes available and reads them; a write source
-- on a full pipe fires (space > 0) once the pipe has been drained, writes a pipe's worth and
-- the reader reads it; dispatch_read delivers 512 written bytes; dispatch_write of a pipe's
-- worth into a full pipe completes (nothing remains) once the pipe has been drained. The pipe's
-- capacity is measured as in C (non-blocking one-byte writes until the pipe refuses).
-- Left out: the Windows-only named pipe kinds. Scaled down: the delay is 0.25 s instead of
-- 0.5 s.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local delay = 0.25
local IMMEDIATE, DELAYED = 0, 1
local delay_names = {[IMMEDIATE] = "Immediate", [DELAYED] = "Delayed"}

local pipe_size
local function test_get_pipe_buffer_size()
    if not pipe_size then
        local r, w = dispatch.fd.pipe()
        dispatch.fd.set_nonblocking(w)
        -- the C test writes one byte at a time; writing in 4 KiB pieces then bytes is faster
        local size, piece = 0, string.rep("\0", 4096)
        while true do
            local n = dispatch.fd.write(w, piece)
            if not n then break end
            size = size + n
        end
        while dispatch.fd.write(w, "\0") do size = size + 1 end
        dispatch.fd.close(r)
        dispatch.fd.close(w)
        pipe_size = size
    end
    return pipe_size
end

local function timer_after(fn)
    local t = dispatch.source.timer{deadline = delay, queue = dispatch.global()}
    t:set_event_handler(fn)
    t:resume()
    return t
end

local function test_source_read(delay_kind)
    print(string.format("\nSource Read %s: anonymous", delay_names[delay_kind]))
    local readfd, writefd = dispatch.fd.pipe()
    local g = dispatch.group()
    g:enter()
    local function write_block()
        g:enter()
        local n = dispatch.fd.write(writefd, string.rep("\0", 512))
        T.sizet("num written", n, 512)
        g:leave()
    end
    if delay_kind == IMMEDIATE then write_block() end
    local reader = dispatch.source.read{fd = readfd, queue = dispatch.global()}
    T.ptr_notnull("dispatch_source_create", reader)
    reader:set_event_handler(function()
        g:enter()
        local available = reader.data
        T.sizet("num available", available, 512)
        local buf = dispatch.fd.read(readfd, 512)
        T.sizet("num read", buf and #buf, 512)
        reader:cancel()
        g:leave()
    end)
    reader:set_cancel_handler(function() g:leave() end)
    reader:resume()
    local t = delay_kind == DELAYED and timer_after(write_block)
    T.group_wait(g)
    if t then t:cancel() end
    dispatch.fd.close(readfd)
    dispatch.fd.close(writefd)
end

local function test_source_write(delay_kind)
    print(string.format("\nSource Write %s: anonymous", delay_names[delay_kind]))
    local readfd, writefd = dispatch.fd.pipe()
    local g = dispatch.group()
    g:enter()
    local bufsize = test_get_pipe_buffer_size()
    local function write_block()
        local nw = dispatch.fd.write(writefd, string.rep("\0", bufsize))
        T.sizet("num written", nw, bufsize)
    end
    write_block()
    local function read_block()
        g:enter()
        local buf = dispatch.fd.read(readfd, bufsize)
        T.sizet("num read", buf and #buf, bufsize)
        g:leave()
    end
    if delay_kind == IMMEDIATE then read_block() end
    local writer = dispatch.source.write{fd = writefd, queue = dispatch.global()}
    T.ptr_notnull("dispatch_source_create", writer)
    writer:set_event_handler(function()
        g:enter()
        local available = writer.data
        T.sizet_less_than("num available", 0, available)
        write_block()
        read_block()
        writer:cancel()
        g:leave()
    end)
    writer:set_cancel_handler(function() g:leave() end)
    writer:resume()
    local t = delay_kind == DELAYED and timer_after(read_block)
    T.group_wait(g)
    if t then t:cancel() end
    dispatch.fd.close(readfd)
    dispatch.fd.close(writefd)
end

local function test_dispatch_read(delay_kind)
    print(string.format("\nDispatch Read %s: anonymous", delay_names[delay_kind]))
    local readfd, writefd = dispatch.fd.pipe()
    local g = dispatch.group()
    g:enter()
    local writebuf = string.rep("\0", 512)
    local function write_block()
        g:enter()
        local n = dispatch.fd.write(writefd, writebuf)
        T.sizet("num written", n, #writebuf)
        g:leave()
    end
    if delay_kind == IMMEDIATE then write_block() end
    dispatch.io.read(readfd, #writebuf, dispatch.global(), function(data, err)
        T.errno("read error", err, 0)
        T.sizet("num read", #data, #writebuf)
        g:leave()
    end)
    local t = delay_kind == DELAYED and timer_after(write_block)
    T.group_wait(g)
    if t then t:cancel() end
    dispatch.fd.close(readfd)
    dispatch.fd.close(writefd)
end

local function test_dispatch_write(delay_kind)
    print(string.format("\nDispatch Write %s: anonymous", delay_names[delay_kind]))
    local readfd, writefd = dispatch.fd.pipe()
    local g = dispatch.group()
    g:enter()
    local bufsize = test_get_pipe_buffer_size()
    local nw = dispatch.fd.write(writefd, string.rep("\0", bufsize))
    T.sizet("num written", nw, bufsize)
    local function read_block()
        g:enter()
        local buf = dispatch.fd.read(readfd, bufsize)
        T.sizet("num read", buf and #buf, bufsize)
        g:leave()
    end
    if delay_kind == IMMEDIATE then read_block() end
    local wd = dispatch.data(string.rep("\0", bufsize))
    dispatch.io.write(writefd, wd, dispatch.global(), function(data, err)
        T.errno("write error", err, 0)
        T.sizet("data written (remaining)", #data, 0)
        read_block()
        g:leave()
    end)
    local t = delay_kind == DELAYED and timer_after(read_block)
    T.group_wait(g)
    if t then t:cancel() end
    dispatch.fd.close(readfd)
    dispatch.fd.close(writefd)
end

T.start("Dispatch IO Pipe")
dispatch.main:async(function()
    test_source_read(IMMEDIATE)
    test_source_read(DELAYED)
    test_source_write(IMMEDIATE)
    test_source_write(DELAYED)
    test_dispatch_read(IMMEDIATE)
    test_dispatch_read(DELAYED)
    test_dispatch_write(IMMEDIATE)
    test_dispatch_write(DELAYED)
    T.stop()
end)
