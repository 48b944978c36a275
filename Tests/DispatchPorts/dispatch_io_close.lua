-- Port of test_io_close of swift-corelibs-libdispatch tests/dispatch_io.c ("Dispatch IO").
-- checks: 78
--
-- A random-access channel (from a descriptor, then from a path) on a large file reads it as
-- four quarter-size reads with a 512 KB high-water mark, in three variants: plain; with a
-- 512 KB low-water mark and a 2 s strict interval (a short delivery that is not the last means
-- the interval fired, and the channel is closed with STOP); and with a timer that closes the
-- channel with STOP after 2 s. The channel is closed twice right after the reads are queued;
-- a read queued after the close ends at once (done, ECANCELED, no data). Each read's error is
-- 0 or, with a timer, ECANCELED; each quarter is read whole (with a timer: at most whole), and
-- the cleanup handler reports no error. Six runs of 13 checks.
-- Adapted: the C test's large file is a 417 MB system file (skipped when absent); this port
-- makes an 8 MiB file of random bytes. "No data" is an empty dispatch.data (the API never
-- passes nil). Scaled down: the interval and the timer are 0.5 s instead of 2 s.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local ECANCELED = 125
local chunks = 4
local READSIZE = 512 * 1024
local delay = 0.5
local path = T.large_file(8 * 1024 * 1024)

local function test_io_close(with_timer, from_path)
    print(string.format("\ntest_io_close(with_timer = %d, from_path = %s)", with_timer, tostring(from_path)))
    local fd = assert(dispatch.fd.open(path, "r"))
    local size = (8 * 1024 * 1024) // chunks
    local expected_error = with_timer > 0 and ECANCELED or 0
    local t
    local g = dispatch.group()
    g:enter()
    local function cleanup_handler(err)
        T.errno("create error", err, 0)
        g:leave()
        dispatch.fd.close(fd)
    end
    local io
    if not from_path then
        io = dispatch.io{fd = fd, type = "random", queue = dispatch.global(), cleanup = cleanup_handler}
    else
        io = dispatch.io{path = path, type = "random", mode = "r", queue = dispatch.global(), cleanup = cleanup_handler}
    end
    io:set_limit{high = READSIZE}
    if with_timer == 1 then
        io:set_limit{low = READSIZE}
        io:set_interval(delay, true)
    elseif with_timer == 2 then
        t = dispatch.source.timer{deadline = delay, queue = dispatch.global()}
        t:set_event_handler(function()
            io:close{stop = true}
            t:cancel()
        end)
        t:resume()
    end
    local chunk_size, total = {}, 0
    local data = {}
    for i = 0, chunks - 1 do
        chunk_size[i] = 0
        data[i] = dispatch.data()
        g:enter()
        io:read(i * size, size, dispatch.global(), function(done, d, err)
            if #d > 0 then
                chunk_size[i] = chunk_size[i] + #d
                data[i] = data[i] .. d
                if #d < READSIZE and err == 0 and not done then
                    -- The timer must have fired
                    io:close{stop = true}
                    return
                end
            end
            if done then
                T.errno("read error", err, err == expected_error and expected_error or 0)
                g:leave()
                data[i] = nil
            end
        end)
    end
    io:close()
    io:close()
    -- (The C test does not wait for this handler; the port counts it in the group so that the
    -- number of checks does not depend on when it runs.)
    g:enter()
    io:read(0, 1, dispatch.global(), function(done, d, err)
        T.long("closed done", done, true)
        T.errno("closed error", err, ECANCELED)
        T.long("closed data", #d, 0)
        g:leave()
    end)
    io = nil
    T.group_wait(g)
    if t then t:cancel() end
    for i = 0, chunks - 1 do
        if with_timer > 0 then
            T.sizet_less_than("chunk size", chunk_size[i], size + 1)
        else
            T.sizet("chunk size", chunk_size[i], size)
        end
        total = total + chunk_size[i]
    end
    if with_timer > 0 then
        T.sizet_less_than("total size", total, chunks * size + 1)
    else
        T.sizet("total size", total, chunks * size)
    end
end

T.start("Dispatch IO close")
dispatch.main:async(function()
    for _, from_path in ipairs{false, true} do
        for i = 0, 2 do test_io_close(i, from_path) end
    end
    os.remove(path)
    T.stop()
end)
