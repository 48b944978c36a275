-- Port of test_io_read_write of swift-corelibs-libdispatch tests/dispatch_io.c ("Dispatch IO").
-- checks: 9
--
-- A stream channel reads 1 MiB of a file with a high-water mark of a quarter of it, and every
-- chunk it delivers is written at once to a second stream channel (high water 1/16); every
-- delivery is smaller than the whole, every write completes with no error and nothing left
-- (and reports less than the whole as remaining before that), both cleanup handlers report no
-- error, the read ends without error, and the output read back with dispatch_read equals the
-- bytes read.
-- Adapted: the C test checks each delivery and each write report as it comes (their number
-- depends on timing); this port counts the ones that break the rule and checks the count once.
-- dispatch.fd has no lseek: the output is read back through a new descriptor. A channel is
-- closed when its work is done (the C test releases it).
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

T.start("Dispatch IO read write")
dispatch.main:async(function()
    local path_in = T.large_file()
    local path_out = os.tmpname()
    local in_ = assert(dispatch.fd.open(path_in, "r"))
    local out = assert(dispatch.fd.open(path_out, "w"))
    local siz_in = 1024 * 1024
    local q = dispatch.global()
    local g = dispatch.group()
    local bad_reads, bad_writes, write_errors = T.counter(), T.counter(), T.counter()
    g:enter()
    local io_in = dispatch.io{fd = in_, type = "stream", queue = q, cleanup = function(err)
        T.errno("dispatch_io_create", err, 0)
        dispatch.fd.close(in_)
        g:leave()
    end}
    io_in:set_limit{high = siz_in // 4}
    g:enter()
    local io_out = dispatch.io{fd = out, type = "stream", queue = q, cleanup = function(err)
        T.errno("dispatch_io_create", err, 0)
        g:leave()
    end}
    io_out:set_limit{high = siz_in // 16}
    local data = dispatch.data()
    local read_error
    g:enter()
    io_in:read(0, siz_in, q, function(done_in, data_in, err_in)
        if #data_in >= siz_in then bad_reads:add(1) end
        if #data_in > 0 then
            g:enter()
            io_out:write(0, data_in, q, function(done_out, data_out, err_out)
                if done_out then
                    if err_out ~= 0 or #data_out ~= 0 then write_errors:add(1) end
                    g:leave()
                elseif #data_out >= siz_in then
                    bad_writes:add(1)
                end
            end)
            data = data .. data_in
        end
        if done_in then
            read_error = err_in
            io_out:close()
            io_in:close()
            g:leave()
        end
    end)
    T.group_wait(g)
    T.errno("dispatch_io_read", read_error, 0)
    T.long("deliveries of the whole size or more", bad_reads:get(), 0)
    T.long("dispatch_io_write errors or data left", write_errors:get(), 0)
    T.long("write reports of the whole size or more", bad_writes:get(), 0)
    local back = assert(dispatch.fd.open(path_out, "r"))
    g:enter()
    dispatch.io.read(back, siz_in, q, function(cmp, err_cmp)
        T.errno("dispatch_read", err_cmp, 0)
        dispatch.fd.close(back)
        dispatch.fd.close(out)
        T.sizet("readback size", #cmp, siz_in)
        T.long("readback memcmp", cmp == data, true)
        g:leave()
    end)
    T.group_wait(g)
    os.remove(path_in)
    os.remove(path_out)
    T.stop()
end)
