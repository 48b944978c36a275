-- title: DispatchData: combine two split files with mapped data and one DispatchIO write
-- seed: 000 §10 (example 10.1, combineFileWithDispatchData: mapped Data -> DispatchData, highWater 2 MiB)
-- expect: 6 checks, 0.05 s per MiB
--
-- Each part is mapped into memory (Data(contentsOf:options:.mappedIfSafe) in the tutorial,
-- dispatch.data.map here) and wrapped as DispatchData without copying; the two are joined
-- into one DispatchData (a virtual concatenation: no bytes move), and one DispatchIO write
-- with a 2 MiB highWater writes it out. Almost no extra memory is used.
--
-- The script makes two parts of scenario.size bytes each in a private temporary directory,
-- checks that the output equals their concatenation (size and checksum) and that the memory
-- the process allocated stayed far below the size of the files, and removes the directory.
--
-- Memory here has two parts. The mapped files' pages count in the resident set once the write
-- has touched them (RssFile): up to the size of both files, but they are the page cache's, and
-- the kernel may drop them at any time. What the process allocated itself (RssAnon) is what a
-- copy would show; it is sampled as the write goes.
local dispatch = require("dispatch")
local scenario = require("scenario")

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

-- Memory watch: the process's resident set, from just before the mapping.
collectgarbage("collect")
local peakReset = scenario.reset_peak_memory()
local memBase = scenario.memory()
local anonPeak, filePeak = memBase.anon, memBase.file
local function sampleMemory()
    local m = scenario.memory()
    if m.anon > anonPeak then anonPeak = m.anon end
    if m.file > filePeak then filePeak = m.file end
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
sampleMemory()

local regions = 0
for _ in dispatchData:regions() do regions = regions + 1 end
print(string.format("one DispatchData of %d bytes made of %d region(s)", #dispatchData, regions))

-- write the DispatchData to the output file
ioWrite:write(0, dispatchData, ioWriteQueue, function(doneWriting, data, error)
    sampleMemory()
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
sampleMemory()
local memPeak = scenario.memory().peak
local MiB = 1 << 20
print(string.format("peak resident memory: %.1f MiB above the start; of it, mapped file pages up to %.1f MiB,",
    (memPeak - memBase.rss) / MiB, (filePeak - memBase.file) / MiB))
print(string.format("memory the process allocated up to %.1f MiB (files: 2 x %.1f MiB)",
    (anonPeak - memBase.anon) / MiB, size / MiB))

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
-- A few MiB of buffers and slack, however large the files. (Below 16 MiB files, that slack is
-- as large as the data itself.)
scenario.check(peakReset and anonPeak - memBase.anon < math.max(size / 4, 16 * MiB),
    "the memory the process allocated stays far below the size of the files: nothing was copied")

scenario.rmtree(dir)
