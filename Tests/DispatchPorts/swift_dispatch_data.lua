-- Port of swiftlang/swift test/stdlib/DispatchData.swift (and the data tests of
-- test/stdlib/Dispatch.swift, which are the same): the Swift overlay's DispatchData API.
-- checks: 35
--
-- dispatch_data_t enumeration of the empty data; the deallocator of data made without copying
-- runs once the data is released; copyBytes(to:from:) into a 6-byte buffer of 0xFF from
-- ranges within one region, across two and three regions (after appending two more regions),
-- skipping regions, and of a single byte, each returning the count copied and leaving the rest
-- of the buffer untouched (the UnsafeBufferPointer and UnsafeRawBufferPointer variants are one
-- test here); DispatchData(bytes:) and (bytesNoCopy:) hold the bytes given, also when empty;
-- enumerateBytes visits 240 bytes in order, region by region, ending at the data's count.
-- Adapted: copyBytes is `d:bytes(i, j)` (1-based, inclusive) copied into a Lua table standing
-- for the buffer; bytesNoCopy with a custom deallocator is dispatch.data.map of a file (the
-- deallocator unmaps it: its release shows as the mapping leaving /proc/self/maps after the
-- data is collected); appending is `..`; enumerateBytes is `d:regions()`. Each buffer state
-- after a copy is one check (the overlay test checks each byte).
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local function bytes(list)
    local s = {}
    for i, b in ipairs(list) do s[i] = string.char(b) end
    return table.concat(s)
end

local function copyBytes(dest, data, from, to) -- to: exclusive, as Swift's from..<to
    local count = math.min(#dest, to - from)
    local s = data:bytes(from + 1, from + count)
    for i = 1, #s do dest[i] = s:byte(i) end
    return count
end

local function show(list)
    local out = {}
    for i, b in ipairs(list) do out[i] = string.format("%02X", b) end
    return table.concat(out, " ")
end

local function check_copy(desc, dest, data, from, to, count, expected)
    T.long(desc .. ": count", copyBytes(dest, data, from, to), count)
    T.long(desc .. ": buffer", show(dest), show(expected))
end

T.start("DispatchAPI (DispatchData)")

-- dispatch_data_t enumeration: ensure we can iterate the empty iterator
local n = 0
for _ in dispatch.data():regions() do n = n + 1 end
T.long("empty data enumerates nothing", n, 0)

-- dispatch_data_t deallocator
do
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    f:write(string.rep("\0", 1024))
    f:close()
    do local _ = assert(dispatch.data.map(path)) end
    local q = dispatch.queue("dealloc queue")
    local t = 0
    q:sync(function()
        for _ = 1, 200 do
            collectgarbage()
            collectgarbage()
            local maps = assert(io.open("/proc/self/maps")):read("a")
            if not maps:find(path, 1, true) then t = 1 break end
            dispatch.sleep(0.005)
        end
    end)
    T.long("deallocator ran", t, 1)
    os.remove(path)
end

-- DispatchData.copyBytes
do
    local FF = 0xFF
    local dest = {FF, FF, FF, FF, FF, FF}
    local data = dispatch.data(bytes{0, 1, 2, 3})
    check_copy("offset 0", dest, data, 0, 2, 2, {0, 1, FF, FF, FF, FF})
    check_copy("offset 2", dest, data, 2, 4, 2, {2, 3, FF, FF, FF, FF})
    -- Add two more regions
    data = data .. dispatch.data(bytes{0x10, 0x11, 0x12, 0x13})
    data = data .. dispatch.data(bytes{0x14, 0x15, 0x16})
    local regions = 0
    for _ in data:regions() do regions = regions + 1 end
    T.long("three regions", regions, 3)
    check_copy("offset 0, across two regions", dest, data, 0, 6, 6, {0, 1, 2, 3, 0x10, 0x11})
    check_copy("offset 2, across two regions", dest, data, 2, 8, 6, {2, 3, 0x10, 0x11, 0x12, 0x13})
    check_copy("offset 3, across three regions", dest, data, 3, 9, 6, {3, 0x10, 0x11, 0x12, 0x13, 0x14})
    check_copy("offset 5, skipping a region", dest, data, 5, 11, 6, {0x11, 0x12, 0x13, 0x14, 0x15, 0x16})
    dest[4], dest[5], dest[6] = FF, FF, FF
    check_copy("offset 8, skipping two regions", dest, data, 8, 11, 3, {0x14, 0x15, 0x16, FF, FF, FF})
    dest[3], dest[4], dest[5], dest[6] = FF, FF, FF, FF
    check_copy("offset 9", dest, data, 9, 11, 2, {0x15, 0x16, FF, FF, FF, FF})
    for i = 2, 6 do dest[i] = FF end
    check_copy("offset 9, one byte", dest, data, 9, 10, 1, {0x15, FF, FF, FF, FF, FF})
    for i = 2, 6 do dest[i] = FF end
    check_copy("offset 2, one byte within the first region", dest, data, 2, 3, 1, {2, FF, FF, FF, FF, FF})
end

-- DispatchData.buffers
do
    local list = {0, 1, 2, 2}
    local data = dispatch.data(bytes(list))
    T.long("DispatchData(bytes:).count", #data, #list)
    T.long("DispatchData(bytes:) bytes", show{data:bytes():byte(1, -1)}, show(list))
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    f:write(bytes(list))
    f:close()
    data = assert(dispatch.data.map(path))
    T.long("DispatchData(bytesNoCopy:).count", #data, #list)
    T.long("DispatchData(bytesNoCopy:) bytes", show{data:bytes():byte(1, -1)}, show(list))
    data = dispatch.data("")
    T.long("DispatchData(bytes: empty).count", #data, 0)
    f = assert(io.open(path, "wb"))
    f:close()
    data = assert(dispatch.data.map(path))
    T.long("DispatchData(bytesNoCopy: empty).count", #data, 0)
    os.remove(path)
end

-- DispatchData.enumerateBytes (and its trailing-closure form, the same in Lua)
for _, form in ipairs{"enumerateBytes", "enumerateBytesTrailingClosure"} do
    local list = {}
    for i = 0, 239 do list[#list + 1] = i end
    -- several regions, so that the enumeration has more than one step
    local whole = bytes(list)
    local data = dispatch.data(whole:sub(1, 100)) .. dispatch.data(whole:sub(101, 170)) .. dispatch.data(whole:sub(171))
    local nextIndex, wrong, steps = 0, 0, 0
    for offset, region in data:regions() do
        steps = steps + 1
        if offset ~= nextIndex then wrong = wrong + 1 end
        local s = region:bytes()
        for i = 1, #s do
            if s:byte(i) ~= (offset + i - 1) % 256 then wrong = wrong + 1 end
        end
        nextIndex = offset + #region
    end
    T.long(form .. ": bytes in order", wrong, 0)
    T.long(form .. ": regions", steps, 3)
    T.long(form .. ": nextIndex == data.count", nextIndex, #data)
end

T.stop()
