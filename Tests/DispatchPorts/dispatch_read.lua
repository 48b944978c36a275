-- Port of swift-corelibs-libdispatch tests/dispatch_read.c ("Dispatch Source Read").
-- checks: 10
--
-- A read source on a 2 MiB regular file (non-blocking) on the main queue: each event's
-- estimate (dispatch_source_get_data) is at most what is left, each run reads up to 500 KB,
-- and a short read is followed by a read at end of file (0 bytes); the cancel handler checks
-- the total and closes the descriptor; the test ends when the source is finalized.
-- 2 MiB in 500 KB reads is five runs: five estimate checks. The finalizer is the source being
-- collected (see bsdtests.lua). Nothing scaled down.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local path = T.large_file()
T.start("Dispatch Source Read")
local infd = assert(dispatch.fd.open(path, "r"))
os.remove(path)
local bytes_total = 2 * 1024 * 1024
local bytes_read = 0
assert(dispatch.fd.set_nonblocking(infd))

local main_q = dispatch.main
T.ptr_notnull("dispatch_get_main_queue", main_q)
local reader = dispatch.source.read{fd = infd, queue = main_q}
local watch = T.watch(reader)
reader:set_event_handler(function()
    local estimated = reader.data
    io.stderr:write(string.format("bytes available: %d\n", estimated))
    T.double_less_than_or_equal("estimated", estimated, bytes_total - bytes_read)
    local bufsiz = 1024 * 500
    local actual = #assert(dispatch.fd.read(infd, bufsiz))
    bytes_read = bytes_read + actual
    print(string.format("bytes read: %d", actual))
    if actual < bufsiz then
        actual = #assert(dispatch.fd.read(infd, bufsiz))
        bytes_read = bytes_read + actual
        -- confirm EOF condition
        T.long("EOF", actual, 0)
        reader:cancel()
    end
end)
reader:set_cancel_handler(function()
    T.sizet("Bytes read", bytes_read, bytes_total)
    local ok, _, err = dispatch.fd.close(infd)
    T.errno("close", ok and 0 or err, 0)
    main_q:async(function()
        T.finalized("test_fin run", watch)
        T.stop()
    end)
end)
reader:resume()
