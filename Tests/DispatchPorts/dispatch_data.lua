-- Port of swift-corelibs-libdispatch tests/dispatch_data.c ("Dispatch Data").
-- checks: 5
--
-- Concatenating two 17-byte data objects gives 34 bytes, mapping the concatenation gives one
-- contiguous 34-byte buffer, and once the data objects are released the second buffer's
-- destructor has run; data over an empty buffer and over a 16-byte static buffer are released
-- without trouble, the latter's destructor running (rdar://problem/9843440).
-- Adapted: data with a destructor are files mapped with dispatch.data.map, whose destructor
-- unmaps them, seen as the mapping leaving /proc/self/maps; release is the collector finding
-- the data (the test collects garbage, then checks on a later main-queue block as in C). The
-- first buffer is copied (dispatch.data of a string: no destructor, as in C). Added: the
-- concatenation's bytes are the two buffers'.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local g = dispatch.group()

local function file(contents)
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    f:write(contents)
    f:close()
    return path
end

local function mapped(path)
    local f = assert(io.open("/proc/self/maps", "r"))
    local maps = f:read("a")
    f:close()
    return maps:find(path, 1, true) ~= nil
end

local function destroyed(path)
    for _ = 1, 200 do
        collectgarbage()
        collectgarbage()
        if not mapped(path) then return true end
        dispatch.sleep(0.005)
    end
    return false
end

local function test_concat()
    g:enter()
    dispatch.main:async(function()
        local buffer1 = "This is buffer1 \0"
        local buffer2 = "This is buffer2 \0"
        local path2 = file(buffer2)
        local data1 = dispatch.data(buffer1)
        local data2 = assert(dispatch.data.map(path2))
        local concat = data1 .. data2
        data1, data2 = nil, nil
        T.long("Data size of concatenated dispatch data", #concat, 34)
        local contig = concat:bytes()
        concat = nil
        T.long("Contiguous memory size", #contig, 34)
        T.long("Contiguous memory contents", contig, buffer1 .. buffer2)
        dispatch.main:async(function()
            T.long("buffer2 destroyed", destroyed(path2), true)
            os.remove(path2)
            g:leave()
        end)
    end)
end

local function test_cleanup()
    g:enter()
    dispatch.main:async(function()
        local path3, path4 = file(""), file(string.rep("\0", 16))
        local data3 = assert(dispatch.data.map(path3))
        local data4 = assert(dispatch.data.map(path4))
        data3, data4 = nil, nil
        dispatch.main:async(function()
            T.long("buffer4 destroyed", destroyed(path4), true)
            os.remove(path3)
            os.remove(path4)
            g:leave()
        end)
    end)
end

T.start("Dispatch Data")
test_concat()
test_cleanup()
g:notify(dispatch.main, function() T.stop() end)
