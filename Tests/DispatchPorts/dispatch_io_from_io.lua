-- Port of test_io_from_io of swift-corelibs-libdispatch tests/dispatch_io.c ("Dispatch IO").
-- checks: 9
--
-- rdar://problem/8388909: a random channel created from a path in a directory that cannot be
-- written reports the error to its write (EACCES; EPERM for an immutable directory) with all
-- 256 bytes unwritten, and its cleanup handler reports no error; then a random channel on a
-- new file writes 10,240 bytes of /dev/urandom read with dispatch_read (nothing remains), and
-- a stream channel made from it reads them all back.
-- Adapted: the directory is made non-writable with chmod 0, as in C without UF_IMMUTABLE; the
-- superuser writes there anyway, so when the test runs as root it uses a path under /sys
-- instead, where creating a file fails with EACCES for everyone. dispatch_io_create_with_io
-- has no Lua form: the read-back channel is a stream channel opened on the same path once the
-- first channel is closed. A channel is closed when its work is done (the C test releases it).
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local EACCES = 13
local siz_in = 10240

local function writable_by_us(dir)
    local f = io.open(dir .. "/probe", "w")
    if f then f:close(); os.remove(dir .. "/probe") end
    return f ~= nil
end

T.start("Dispatch IO from io")
dispatch.main:async(function()
    local q = dispatch.global()
    local g = dispatch.group()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir " .. dir .. " && chmod 0 " .. dir))
    local path = dir .. "/file.name"
    if writable_by_us(dir) then path = "/sys/dispatchtest_io.file.name" end

    local cleaned = dispatch.group()
    cleaned:enter()
    local io = dispatch.io{path = path, type = "random", mode = "w+", permissions = "0600", queue = q,
                           cleanup = function(err)
        T.errno("channel cleanup called", err, 0)
        cleaned:leave()
    end}
    g:enter()
    io:write(0, string.rep("\0", 256), q, function(done, data_out, err_out)
        T.errno("error from write to write protected directory", err_out, EACCES)
        T.sizet("unwritten data", #data_out, 256)
        if done then g:leave() end
    end)
    T.group_wait(g)
    io:close()
    T.group_wait(cleaned)
    assert(os.execute("chmod 700 " .. dir))

    local in_ = assert(dispatch.fd.open("/dev/urandom", "r"))
    path = dir .. "/file.name"
    g:enter()
    cleaned:enter()
    io = dispatch.io{path = path, type = "random", mode = "w+", permissions = "0600", queue = q,
                     cleanup = function(err)
        T.errno("channel cleanup called", err, 0)
        cleaned:leave()
    end}
    dispatch.io.read(in_, siz_in, q, function(data_in, err_in)
        T.errno("dispatch_read", err_in, 0)
        dispatch.fd.close(in_)
        io:write(0, data_in, q, function(done, data_out, err_out)
            if done then
                T.errno("dispatch_io_write", err_out, 0)
                T.sizet("remaining write size", #data_out, 0)
                g:leave()
            end
        end)
    end)
    T.group_wait(g)
    io:close()
    T.group_wait(cleaned)

    local io2 = dispatch.io{path = path, type = "stream", mode = "r", queue = q}
    g:enter()
    local data_out = dispatch.data()
    local read_error
    io2:read(0, siz_in, q, function(done, d, err)
        data_out = data_out .. d
        if done then
            read_error = err
            g:leave()
        end
    end)
    T.group_wait(g)
    io2:close()
    T.errno("read error from channel created_with_io", read_error, 0)
    T.sizet("readback size", #data_out, siz_in)
    os.remove(path)
    os.remove(dir)
    T.stop()
end)
