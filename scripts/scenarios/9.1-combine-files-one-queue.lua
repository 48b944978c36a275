-- title: DispatchIO: combine two split files with one serial queue
-- seed: 000 §9 (example 9.1, combineFileWithOneQueue: stream channels, highWater 1 MiB)
-- expect: 4 checks, 0.1 s per MiB
--
-- Two parts of a split archive are joined into one file with very little memory: one
-- write channel and one read channel per part, all on the same serial queue. Each chunk
-- read (at most 1 MiB: setLimit(highWater:)) is written at once, in read order, so a chunk
-- is never held for long. The second part is read only after the first one is fully
-- read and written (a group wait). Several threads serve the serial queue over time, but
-- only one at a time.
--
-- The tutorial joins two 350 MB parts of a WWDC video; here the script makes two parts of
-- scenario.size bytes each in a private temporary directory, then checks that the output
-- equals their concatenation (size and checksum) and that the process's peak resident memory
-- during the copy stayed well below the size of the data (so no one held all of it: not Lua,
-- not the runtime, not Dispatch), and removes the directory.
local dispatch = require("dispatch")
local scenario = require("scenario")

local dir = scenario.tmpdir()
local size = scenario.size
local files = { dir .. "/gcd.mp4.zip.001", dir .. "/gcd.mp4.zip.002" }
local outFile = dir .. "/gcd.mp4.zip"
scenario.make_part(files[1], size, 1)
scenario.make_part(files[2], size, 2)
print(string.format("made two parts of %d bytes each in %s", size, dir))

local t0 = dispatch.now()
local function date()
    return string.format("%s (+%.2f s)", os.date("!%Y-%m-%d %H:%M:%S +0000"), dispatch.now() - t0)
end

-- Memory watch: the peak resident set of the whole process, from just before the copy.
collectgarbage("collect")
local peakReset = scenario.reset_peak_memory()
local memBase = scenario.memory()

-- tracing: the first lines of each kind per part, then a count
local traced, traceCount, threadsSeen = {}, 0, {}
local function trace(kind, line)
    local t = dispatch.thread()
    threadsSeen[t.number] = true
    traceCount = traceCount + 1
    traced[kind] = (traced[kind] or 0) + 1
    if traced[kind] <= 4 then
        print(line)
    elseif traced[kind] == 5 then
        print(".....")
    end
end

-------------------------------------------------------------------- combineFileWithOneQueue
local ioQueue = dispatch.queue("com.sinkingsoul.DispatchQueueTest.serialQueue")
local queueGroup = dispatch.group()
local writeFinished = dispatch.semaphore(0)
local stop = false
local errors = {}

local ioWriteCleanupHandler = function(errorNumber)
    print("Finished writing the file @" .. date() .. ".")
    writeFinished:signal()
end

local ioReadCleanupHandler = function(errorNumber)
    print("Finished reading the file.")
end

local ioWrite = dispatch.io{
    type = "stream", path = outFile,
    mode = "a+",                 -- O_RDWR | O_CREAT | O_APPEND
    permissions = "0770",        -- S_IRWXU | S_IRWXG
    queue = ioQueue, cleanup = ioWriteCleanupHandler,
}
ioWrite:set_limit{ high = 1024 * 1024 }

print("Start @" .. date() .. ".")

for index, fileName in ipairs(files) do
    if stop then break end
    queueGroup:enter()

    local ioRead = dispatch.io{
        type = "stream", path = fileName, mode = "r",   -- O_RDONLY
        queue = ioQueue, cleanup = ioReadCleanupHandler,
    }
    ioRead:set_limit{ high = 1024 * 1024 }

    print("Start reading the data of file: " .. fileName)

    ioRead:read(0, math.huge, ioQueue, function(doneReading, data, error)
        local thread = tostring(dispatch.thread())
        trace("read" .. index, "current read thread: " .. thread .. "--->")
        if error > 0 or stop then
            print("Read error, errno: " .. dispatch.errno_name(error))
            errors[#errors + 1] = "read " .. dispatch.errno_name(error)
            ioWrite:close()
            stop = true
            queueGroup:leave()   -- (not in the tutorial: leave, so the wait below cannot hang)
            return
        end

        if data ~= nil then
            local bytesRead = #data
            if bytesRead > 0 then
                queueGroup:enter()
                ioWrite:write(0, data, ioQueue, function(doneWriting, remaining, error)
                    local wthread = tostring(dispatch.thread())
                    trace("write" .. index, "current write thread: " .. wthread .. "--->")
                    if error > 0 or stop then
                        print("Write error, errno: " .. dispatch.errno_name(error))
                        errors[#errors + 1] = "write " .. dispatch.errno_name(error)
                        ioRead:close()
                        stop = true
                        queueGroup:leave()
                        return
                    end
                    if doneWriting then
                        queueGroup:leave()
                    end
                    trace("write" .. index, "--->current write thread: " .. wthread)
                end)
            end
        end

        if doneReading then
            ioRead:close()
            if #files == index then
                ioWrite:close()
            end
            queueGroup:leave()
        end
        trace("read" .. index, "--->current read thread: " .. thread)
    end)
    queueGroup:wait()   -- .distantFuture: the next part starts once this one is done
end

local finished = writeFinished:wait(60)
local memPeak = scenario.memory().peak
local nums = {}
for n in pairs(threadsSeen) do nums[#nums + 1] = n end
table.sort(nums)
print(string.format("(%d handler lines in all; the serial queue used thread(s) %s, one at a time)",
    traceCount, table.concat(nums, ", ")))

-------------------------------------------------------------------- verification
local growth = memPeak - memBase.rss
local MiB = 1 << 20
print(string.format("peak resident memory during the copy: %.1f MiB, %.1f MiB above the start (files: 2 x %.1f MiB)",
  memPeak / MiB, growth / MiB, size / MiB))
local hIn, nIn = scenario.checksum(files)
local hOut, nOut = scenario.checksum({ outFile })
print(string.format("input parts: %d bytes, checksum %016x", nIn, hIn))
print(string.format("output file: %d bytes, checksum %016x", nOut, hOut))

scenario.check(finished and #errors == 0, "the write channel finished without errors")
scenario.check(nOut == 2 * size and nOut == nIn, "the output size is the sum of the parts")
scenario.check(hOut == hIn, "the output equals the concatenation of the parts (checksum)")
-- The chunks read and not yet written, the threads' stacks and the allocator's slack. Reads do
-- not wait for writes, so when reading runs ahead the chunks waiting to be written add up: a few
-- MiB to some tens of MiB at 2 x 256 MiB, depending on the disk and the page cache, and at worst
-- one part (the next part is read only once this one is written). Never all of the data.
-- (Below 16 MiB files, the slack alone is as large as the data.)
scenario.check(peakReset and growth < math.max(1.5 * size, 16 * MiB),
  "peak resident memory during the copy stays below 3/4 of the data copied: it is never all held")

scenario.rmtree(dir)
