-- Port of swift-corelibs-libdispatch tests/dispatch_select.c ("Dispatch select workaround test").
-- checks: 19
--
-- <rdar://problem/7678012>: read sources on a character device and on a regular file, one
-- after the other on the main queue. Stage 1: /dev/random becomes readable; one read of up to
-- 500 KB (at most the buffer), cancel, close from the cancel handler. Stage 2: a 2 MiB file read
-- in 500 KB reads, each event's estimate at most what is left, a short read followed by end of
-- file, the total checked and the descriptor closed in the cancel handler. Stage 3: /dev/random
-- again; the test ends when that source is finalized (here: collected, see bsdtests.lua).
-- The C test's test_ptr_notnull checks of the main queue and of each source are kept. Nothing
-- scaled down.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local actual = 0
local stage2

local function stage1(stage)
    local path = "/dev/random"
    local fd = assert(dispatch.fd.open(path, "r"))
    local main_q = dispatch.main
    T.ptr_notnull("main_q", main_q)
    local source = dispatch.source.read{fd = fd, queue = main_q}
    T.ptr_notnull("select source", source)
    local watch = stage == 3 and T.watch(source)
    source:set_event_handler(function()
        local buffer_size = 500 * 1024
        local sz = #assert(dispatch.fd.read(fd, buffer_size))
        T.sizet_less_than_or_equal("kevent read 1", sz, buffer_size + 1)
        source:cancel()
    end)
    source:set_cancel_handler(function()
        local ok, _, err = dispatch.fd.close(fd)
        T.errno("close", ok and 0 or err, 0)
        if stage == 1 then
            main_q:async(stage2)
        else
            main_q:async(function()
                T.finalized("finish", watch)
                T.stop()
            end)
        end
    end)
    source:resume()
end

function stage2()
    local path = T.large_file()
    local fd = assert(dispatch.fd.open(path, "r"))
    os.remove(path)
    local expected = 2 * 1024 * 1024
    actual = 0
    local main_q = dispatch.main
    T.ptr_notnull("main_q", main_q)
    local source = dispatch.source.read{fd = fd, queue = main_q}
    T.ptr_notnull("kevent source", source)
    source:set_event_handler(function()
        local est = source.data
        T.sizet_less_than_or_equal("estimated", est, expected - actual)
        local bufsize = 500 * 1024
        local sz = #assert(dispatch.fd.read(fd, bufsize))
        actual = actual + sz
        if sz < bufsize then
            sz = #assert(dispatch.fd.read(fd, bufsize))
            actual = actual + sz
            T.long("EOF", sz, 0)
            source:cancel()
        end
    end)
    source:set_cancel_handler(function()
        T.long("bytes read", actual, expected)
        local ok, _, err = dispatch.fd.close(fd)
        T.errno("close", ok and 0 or err, 0)
        main_q:async(function() stage1(3) end)
    end)
    source:resume()
end

T.start("Dispatch select workaround test")
dispatch.main:async(function() stage1(1) end)
