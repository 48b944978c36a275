-- Port of test_read_many_files of swift-corelibs-libdispatch tests/dispatch_io.c ("Dispatch IO").
-- checks: 5
--
-- Every file of a directory tree (dot entries skipped, as fts with FTS_SKIP) is read in five
-- ways, at most maxopenfiles at a time (a semaphore): read() in a block on a concurrent queue,
-- the same on a serial queue, dispatch_read, a random channel on the descriptor, a random
-- channel from the path (each channel with a 20 s strict interval, closing itself if a delivery
-- brings nothing). Each way's total of bytes read equals the tree's total size; the throughput
-- is printed.
-- Adapted: the C test reads /usr/lib (thousands of files); this port makes its own tree of
-- 400 files of 0 to 64 KiB in 20 directories (plus a skipped dot directory), so that its time
-- and result do not depend on the machine; maxopenfiles is 256 instead of 4096. The tree is
-- listed with find(1) instead of fts. A channel is closed when its read is done (the C test
-- releases it; a Lua channel closes when collected).
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local maxopenfiles = 256

local function make_tree()
    local root = os.tmpname()
    os.remove(root)
    assert(os.execute("mkdir -p " .. root .. "/.hidden"))
    local f = assert(io.open(root .. "/.hidden/skipped", "wb"))
    f:write(string.rep("x", 1000))
    f:close()
    for d = 1, 20 do
        local dir = string.format("%s/d%02d", root, d)
        assert(os.execute("mkdir -p " .. dir))
        for i = 1, 20 do
            f = assert(io.open(string.format("%s/f%02d", dir, i), "wb"))
            f:write(string.rep(string.char((d * 20 + i) % 256), ((d * 7919 + i * 104729) % 65537)))
            f:close()
        end
    end
    return root
end

local function enumerate(root, process_file)
    local p = assert(io.popen("find " .. root .. " -mindepth 1 -name '.*' -prune -o -type f -printf '%s %p\\n'"))
    for line in p:lines() do
        local size, path = line:match("^(%d+) (.*)$")
        process_file(path, tonumber(size))
    end
    p:close()
end

local function test_async_read(path, size, option, queue, process_data)
    local fd = assert(dispatch.fd.open(path, "r"))
    if option == 1 or option == 2 then
        queue:async(function()
            local buffer = assert(dispatch.fd.read(fd, size))
            dispatch.fd.close(fd)
            process_data(#buffer)
        end)
    elseif option == 3 then
        dispatch.io.read(fd, size, queue, function(d, err)
            if err ~= 0 then T.errno("dispatch_read error", err, 0) end
            dispatch.fd.close(fd)
            process_data(#d)
        end)
    else
        local d = dispatch.data()
        local io
        local function cleanup_handler(err)
            if err ~= 0 then T.errno("dispatch_io_create error", err, 0) end
            dispatch.fd.close(fd)
            process_data(#d)
        end
        if option == 5 then
            io = dispatch.io{path = path, type = "random", mode = "r", queue = queue, cleanup = cleanup_handler}
        else
            io = dispatch.io{fd = fd, type = "random", queue = queue, cleanup = cleanup_handler}
        end
        -- Timeout after 20 secs
        io:set_interval(20, true)
        io:read(0, size, queue, function(done, data, err)
            if not done and err == 0 and #data == 0 then
                -- Timer fired, and no progress from last delivery
                io:close{stop = true}
            end
            d = d .. data
            if err ~= 0 and err ~= 125 then T.errno("dispatch_io_read error", err, 0) end
            if done then io:close() end
        end)
    end
end

local function test_read_dirs(root, queue, g, s, bytes, option)
    local files_opened, total_size = 0, 0
    enumerate(root, function(path, size)
        g:enter()
        s:wait()
        total_size = total_size + size
        files_opened = files_opened + 1
        test_async_read(path, size, option, queue, function(len)
            bytes:add(len)
            s:signal()
            g:leave()
        end)
    end)
    T.group_wait(g)
    T.sizet("total size", bytes:get(), total_size)
    return files_opened
end

T.start("Dispatch IO read many files")
dispatch.main:async(function()
    local root = make_tree()
    local g = dispatch.group()
    local s = dispatch.semaphore(maxopenfiles)
    local serial = dispatch.queue{label = "read", inactive = true}
    serial:set_target(dispatch.global("utility"))
    serial:activate()
    local low = dispatch.global("utility")
    local queues = {low, serial, low, low, low}
    local names = {
        "dispatch_async(^{read();}) on concurrent queue",
        "dispatch_async(^{read();}) on serial queue",
        "dispatch_read() on concurrent queue",
        "dispatch_io_read() on concurrent queue",
        "dispatch_io_read() from path on concurrent queue",
    }
    for i = 1, #queues do
        print(names[i] .. ":")
        local bytes = T.counter()
        local start = dispatch.now()
        local files_read = test_read_dirs(root, queues[i], g, s, bytes, i)
        local elapsed = dispatch.now() - start
        print(string.format("Total Files read: %d, Total MBytes %g, Total time: %g s, Throughput: %g MB/s",
            files_read, bytes:get() / 1048576, elapsed, bytes:get() / elapsed / 1048576))
    end
    os.execute("rm -rf " .. root)
    T.stop()
end)
