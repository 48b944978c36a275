-- Port of swift-corelibs-libdispatch tests/dispatch_read2.c ("Dispatch IO Convenience Read/Write").
-- checks: 26
--
-- test_read: dispatch_read of a 2 MiB file to its end (rdar://problem/7795794: length
-- SIZE_MAX) delivers the whole file, contiguous and equal to it; so does dispatch_read2, the
-- same read built from a read source and dispatch_data concatenation (with an end-of-file check).
-- test_read_write: 10,240 bytes of /dev/urandom read with dispatch_read, written with
-- dispatch_write (nothing remains) and read back equal. test_read_writes
-- (rdar://problem/7785143): the same bytes written as 320 dispatch_write calls of 32-byte
-- subranges on one descriptor, read back equal (writes on one descriptor keep their order).
-- test_writes_reads_eagain (rdar://problem/8333366): chained dispatch_read calls on a pipe
-- receive 320 chunks of 32 bytes written 10 ms apart, one delivery per chunk: a read on a
-- pipe delivers what has arrived instead of waiting for the whole length.
-- Adapted: dispatch.fd has no lseek, so where the C test seeks a descriptor back to 0 this
-- port opens the file again (a second descriptor reads from the start); files are removed at
-- the end instead of right after opening. pread of the comparison is a Lua io read.
-- The pipe's writer waits for each chunk's delivery (at most 1 s) and then 1 ms before the
-- next chunk, instead of writing every 10 ms whatever the reader does: two chunks can then
-- never arrive within one read, which made the exact count of deliveries depend on timing (a
-- read that waited for the whole length would end every wait at its 1 s timeout, and fail).
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

-- Basic way of implementing dispatch_io's dispatch_read without using dispatch channel APIs.
local function dispatch_read2(fd, length, queue, handler)
    assert(dispatch.fd.set_nonblocking(fd))
    local reader = dispatch.source.read{fd = fd, queue = queue}
    T.ptr_notnull("reader", reader)
    local bytes_read = 0
    local data = dispatch.data()
    local err = 0
    reader:set_event_handler(function()
        local bufsiz = 1024 * 512
        local chunk, _, e = dispatch.fd.read(fd, bufsiz)
        local actual = chunk and #chunk or -1
        if not chunk then err = e end
        if actual > 0 then
            bytes_read = bytes_read + actual
            data = data .. dispatch.data(chunk)
        end
        -- If we reached EOF or we read as much we were asked to.
        if actual < bufsiz or bytes_read >= length then
            actual = #assert(dispatch.fd.read(fd, 2))
            bytes_read = bytes_read + actual
            T.long("EOF", actual, 0)
            reader:cancel()
        end
    end)
    reader:set_cancel_handler(function()
        handler(data:sub(1, length), err)
    end)
    reader:resume()
end

local function contents(path)
    local f = assert(io.open(path, "rb"))
    local s = f:read("a")
    f:close()
    return s
end

local function test_read()
    local path = T.large_file()
    local fd = assert(dispatch.fd.open(path, "r"))
    local size = 2 * 1024 * 1024
    local g = dispatch.group()
    local function b(d, err)
        T.errno("read error", err, 0)
        T.sizet("dispatch data size", d and #d or 0, size)
        if d then
            local contig = d:bytes()
            T.sizet("dispatch data contig size", #contig, size)
            if #contig > 0 then
                -- Validate the copied buffer is similar to what we expect
                T.long("dispatch data contents", contig == contents(path), true)
            end
        end
        g:leave()
    end
    g:enter()
    dispatch.io.read(fd, math.huge, dispatch.global(), b) -- rdar://problem/7795794
    T.group_wait(g)
    dispatch.fd.close(fd)
    fd = assert(dispatch.fd.open(path, "r")) -- lseek(fd, 0, SEEK_SET)
    g:enter()
    dispatch_read2(fd, size, dispatch.global(), b)
    T.group_wait(g)
    dispatch.fd.close(fd)
    os.remove(path)
end

local function test_read_write()
    local siz_in = 10240
    local in_ = assert(dispatch.fd.open("/dev/urandom", "r"))
    local path_out = os.tmpname()
    local out = assert(dispatch.fd.open(path_out, "w"))
    local q = dispatch.global()
    local g = dispatch.group()
    g:enter()
    dispatch.io.read(in_, siz_in, q, function(data_in, err_in)
        T.errno("dispatch_read", err_in, 0)
        dispatch.fd.close(in_)
        local siz_out = #data_in
        T.sizet("read size", siz_out, siz_in)
        local data = data_in
        dispatch.io.write(out, data, q, function(data_out, err_out)
            T.errno("dispatch_write", err_out, 0)
            T.sizet("dispatch_write remaining", #data_out, 0)
            local back = assert(dispatch.fd.open(path_out, "r")) -- lseek(out, 0, SEEK_SET)
            dispatch.io.read(back, siz_out, q, function(cmp, err_cmp)
                T.errno("dispatch_read", err_cmp, 0)
                dispatch.fd.close(back)
                dispatch.fd.close(out)
                T.sizet("readback size", #cmp, siz_out)
                T.long("readback memcmp", cmp == data, true)
                g:leave()
            end)
        end)
    end)
    T.group_wait(g)
    os.remove(path_out)
end

local function test_read_writes() -- <rdar://problem/7785143>
    local chunks_out, siz_chunk = 320, 32
    local siz_in = siz_chunk * chunks_out
    local in_ = assert(dispatch.fd.open("/dev/urandom", "r"))
    local path_out = os.tmpname()
    local out = assert(dispatch.fd.open(path_out, "w"))
    local q = dispatch.global()
    local g = dispatch.group()
    local data, siz_out
    local failures = T.counter()
    g:enter()
    dispatch.io.read(in_, siz_in, q, function(data_in, err_in)
        T.errno("dispatch_read", err_in, 0)
        dispatch.fd.close(in_)
        siz_out = #data_in
        T.sizet("read size", siz_out, siz_in)
        data = data_in
        local data_chunks = {}
        for i = 0, chunks_out - 1 do
            data_chunks[i] = data_in:sub(i * siz_chunk + 1, (i + 1) * siz_chunk)
        end
        for i = 0, chunks_out - 1 do
            g:enter()
            dispatch.io.write(out, data_chunks[i], q, function(data_out, err_out)
                if err_out ~= 0 or #data_out > 0 then failures:add(1) end
                g:leave()
            end)
        end
        g:leave()
    end)
    T.group_wait(g)
    T.long("dispatch_write errors", failures:get(), 0)
    g:enter()
    local back = assert(dispatch.fd.open(path_out, "r")) -- lseek(out, 0, SEEK_SET)
    dispatch.io.read(back, siz_in, q, function(cmp, err_cmp)
        T.errno("dispatch_read", err_cmp, 0)
        dispatch.fd.close(back)
        dispatch.fd.close(out)
        T.sizet("readback size", #cmp, siz_out)
        T.long("readback memcmp", cmp == data, true)
        g:leave()
    end)
    T.group_wait(g)
    os.remove(path_out)
end

local function test_writes_reads_eagain() -- rdar://problem/8333366
    local in_ = assert(dispatch.fd.open("/dev/urandom", "r"))
    local rfd, wfd = dispatch.fd.pipe()
    local chunks, siz_chunk = 320, 32
    local siz = siz_chunk * chunks
    local q = dispatch.global()
    local g = dispatch.group()
    local siz_acc, deliveries = 0, 0
    local errors = 0
    local delivered = dispatch.semaphore(0)
    local b
    b = function(data, err)
        if err ~= 0 then errors = errors + 1 end
        deliveries = deliveries + 1
        siz_acc = siz_acc + #data
        delivered:signal()
        if siz_acc < siz then
            g:enter()
            dispatch.io.read(rfd, siz, q, b)
        end
        g:leave()
    end
    g:enter()
    dispatch.io.read(rfd, siz, q, b)
    for i = 1, chunks do
        local buf = assert(dispatch.fd.read(in_, siz_chunk))
        assert(#buf == siz_chunk)
        assert(dispatch.fd.write(wfd, buf) == siz_chunk)
        -- The next chunk goes once this one is delivered (1 s at most), then 1 ms later.
        if i < chunks then delivered:wait(1) end
        dispatch.sleep(0.001)
    end
    dispatch.fd.close(in_)
    dispatch.fd.close(wfd)
    T.group_wait(g)
    T.long("dispatch_read errors", errors, 0)
    T.sizet("dispatch_read deliveries", deliveries, chunks)
    T.sizet("dispatch_read data size", siz_acc, siz)
    dispatch.fd.close(rfd)
end

T.start("Dispatch IO Convenience Read/Write")
dispatch.main:async(function()
    test_read()
    test_read_write()
    test_read_writes()
    test_writes_reads_eagain()
    T.stop()
end)
