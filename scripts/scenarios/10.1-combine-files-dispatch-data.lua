-- title: DispatchData: combine two split files with mapped data and one DispatchIO write
-- seed: 000 §10 (example 10.1, combineFileWithDispatchData: mapped Data -> DispatchData, highWater 2 MiB)
--
-- Each part is mapped into memory (Data(contentsOf:options:.mappedIfSafe) in the tutorial,
-- dispatch.data.map here) and wrapped as DispatchData without copying; the two are joined
-- into one DispatchData (a virtual concatenation: no bytes move), and one DispatchIO write
-- with a 2 MiB highWater writes it out. Almost no extra memory is used.
--
-- The script makes two parts of scenario.size bytes each in a private temporary directory,
-- checks that the output equals their concatenation (size and checksum), that no bytes
-- were copied into Lua strings (the Lua heap does not grow with the file size), and removes
-- the directory.
local dispatch = require("dispatch")
local scenario = require("scenario")

local CHUNK = 1 << 20

local dir = scenario.tmpdir()
local size = scenario.size
local filePathArray = { dir .. "/gcd.mp4.zip.001", dir .. "/gcd.mp4.zip.002" }
local outputFilePath = dir .. "/gcd.mp4.zip"
scenario.make_part(filePathArray[1], size, 1)
scenario.make_part(filePathArray[2], size, 2)
print(string.format("made two parts of %d bytes each in %s", size, dir))

local t0 = dispatch.now()
local function date()
    return string.format("%s (+%.2f s)", os.date("!%Y-%m-%d %H:%M:%S +0000"), dispatch.now() - t0)
end

-- Lua heap watch
collectgarbage("collect")
local heapBase = collectgarbage("count")
local heapPeak = heapBase
local function watchHeap()
    local kb = collectgarbage("count")
    if kb > heapPeak then heapPeak = kb end
end

-------------------------------------------------------------------- combineFileWithDispatchData
local ioWriteQueue = dispatch.queue("com.sinkingsoul.DispatchQueueTest.serialQueue")
local writeFinished = dispatch.semaphore(0)
local errors = {}
local progressLines = 0

local ioWriteCleanupHandler = function(errorNumber)
    print("Finished writing the file @" .. date() .. ".")
    writeFinished:signal()
end
local ioWrite = dispatch.io{
    type = "stream", path = outputFilePath,
    mode = "a+",                 -- O_RDWR | O_CREAT | O_APPEND
    permissions = "0770",        -- S_IRWXU | S_IRWXG
    queue = ioWriteQueue, cleanup = ioWriteCleanupHandler,
}
ioWrite:set_limit{ high = 1024 * 1024 * 2 }

print("Start @" .. date() .. ".")

-- join all the files into one DispatchData
local dispatchData = dispatch.data()          -- DispatchData.empty
for _, filePath in ipairs(filePathArray) do
    -- the file as mapped data, without copying
    local fileData, message, errno = dispatch.data.map(filePath)
    if fileData == nil then
        print("cannot map " .. filePath .. ": " .. tostring(message))
        errors[#errors + 1] = "map " .. tostring(message)
    else
        -- append (a virtual concatenation)
        dispatchData = dispatchData .. fileData
    end
end
watchHeap()

local regions = 0
for _ in dispatchData:regions() do regions = regions + 1 end
print(string.format("one DispatchData of %d bytes made of %d region(s)", #dispatchData, regions))

-- write the DispatchData to the output file
ioWrite:write(0, dispatchData, ioWriteQueue, function(doneWriting, data, error)
    watchHeap()
    if error > 0 then
        print("Write error, errno: " .. dispatch.errno_name(error))
        errors[#errors + 1] = "write " .. dispatch.errno_name(error)
        ioWrite:close()
        return
    end

    if data ~= nil and not doneWriting then
        progressLines = progressLines + 1
        if progressLines <= 3 then
            print(string.format("Writing the file, %d bytes left.", #data))
        elseif progressLines == 4 then
            print(".....")
        end
    end

    if doneWriting then
        ioWrite:close()
    end
end)
local totalSize = #dispatchData
dispatchData = nil   -- the write operation keeps what it still needs

local finished = writeFinished:wait(60)
local heapGrowth = (heapPeak - heapBase) * 1024
print(string.format("Lua heap growth while mapping, joining and writing: %.0f KiB (files: %d KiB)",
    heapGrowth / 1024, 2 * size // 1024))

-------------------------------------------------------------------- verification
local hIn, nIn = scenario.checksum(filePathArray)
local hOut, nOut = scenario.checksum({ outputFilePath })
print(string.format("input parts: %d bytes, checksum %016x", nIn, hIn))
print(string.format("output file: %d bytes, checksum %016x", nOut, hOut))

scenario.check(finished and #errors == 0, "the files were mapped and written without errors")
scenario.check(totalSize == 2 * size, "the joined DispatchData is as large as both parts")
scenario.check(nOut == 2 * size and nOut == nIn, "the output size is the sum of the parts")
scenario.check(hOut == hIn, "the output equals the concatenation of the parts (checksum)")
scenario.check(regions >= 2, "the joined data keeps the parts' own regions (no copy into one buffer)")
scenario.check(heapGrowth < math.max(2 * size / 8, 2 * CHUNK),
    "bytes were not copied into Lua strings (the Lua heap stays far below the file size)")

scenario.rmtree(dir)
