-- title: DispatchIO: combine two split files with two read and two write queues
-- seed: 000 §9 (example 9.2, combineFileWithMoreQueues: random-access writes at offsets)
-- expect: 3 checks, 0.05 s per MiB
--
-- Like 9.1, but each part gets its own read queue and its own write queue (four serial
-- queues working at the same time), and the output channel is a random-access channel:
-- each chunk is written at its own offset (the sizes of the parts before it plus what has
-- been read of this part so far), so both parts are copied at once.
--
-- The script makes two parts of scenario.size bytes each in a private temporary directory,
-- checks that the output equals their concatenation (size and checksum) and removes it.
-- Linux note: the tutorial opens the output with O_APPEND. On Linux pwrite() on an O_APPEND
-- descriptor ignores the offset and appends, which would scramble a random-access copy,
-- so the output is opened with mode "w" (O_WRONLY | O_CREAT | O_TRUNC) instead.
local dispatch = require("dispatch")
local scenario = require("scenario")

local CHUNK = 1 << 20

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

local function fileSizeOf(path)
    local f = assert(io.open(path, "rb"))
    local n = f:seek("end")
    f:close()
    return n
end

-- tracing: the first lines per part and kind, then a count; which threads ran which queue
local traced, threadsOf = {}, {}
local function trace(kind, queueLabel, line)
    local t = dispatch.thread()
    threadsOf[queueLabel] = threadsOf[queueLabel] or {}
    threadsOf[queueLabel][t.number] = true
    traced[kind] = (traced[kind] or 0) + 1
    if traced[kind] <= 2 then
        print(line)
    elseif traced[kind] == 3 then
        print(".....")
    end
end

-------------------------------------------------------------------- combineFileWithMoreQueues
local fileSize = {}
for i, file in ipairs(files) do fileSize[i] = fileSizeOf(file) end

-- one read queue and one write queue per part
local ioReadQueue1 = dispatch.queue("com.sinkingsoul.DispatchQueueTest.serialQueue1")
local ioReadQueue2 = dispatch.queue("com.sinkingsoul.DispatchQueueTest.serialQueue2")
local ioWriteQueue1 = dispatch.queue("com.sinkingsoul.DispatchQueueTest.serialQueue3")
local ioWriteQueue2 = dispatch.queue("com.sinkingsoul.DispatchQueueTest.serialQueue4")

local ioReadQueueArray = { ioReadQueue1, ioReadQueue2 }
local ioWriteQueueArray = { ioWriteQueue1, ioWriteQueue2 }
local writeFinished = dispatch.semaphore(0)
local errors = {}
-- The four queues run at the same time: errors are recorded on a serial queue, one at a time.
local errorsQueue = dispatch.queue("errors")
local function recordError(e) errorsQueue:sync(function() errors[#errors + 1] = e end) end

local ioWriteCleanupHandler = function(errorNumber)
    print("Finished writing the file @" .. date() .. ".")
    writeFinished:signal()
end
local ioReadCleanupHandler = function(errorNumber)
    print("Finished reading a file @" .. date() .. ".")
end

local queueGroup = dispatch.group()

print("Start @" .. date() .. ".")

local ioWrite = dispatch.io{
    type = "random", path = outFile,
    mode = "w",                  -- (the tutorial: O_RDWR | O_CREAT | O_APPEND, see the note above)
    permissions = "0770",        -- S_IRWXU | S_IRWXG
    queue = ioWriteQueue1, cleanup = ioWriteCleanupHandler,
}
ioWrite:set_limit{ high = 1024 * 1024, low = 1024 * 1024 }

-- offsets: the size of the parts before each one
table.insert(fileSize, 1, 0)
table.remove(fileSize)

for index, file in ipairs(files) do
    dispatch.global():sync(function()
        queueGroup:enter()

        local ioRead = dispatch.io{
            type = "stream", path = file, mode = "r",
            queue = ioReadQueue1, cleanup = ioReadCleanupHandler,
        }
        ioRead:set_limit{ high = 1024 * 1024, low = 1024 * 1024 }

        local writeOffsetTemp = 0
        for k = 1, index do writeOffsetTemp = writeOffsetTemp + fileSize[k] end

        local readQueue, writeQueue = ioReadQueueArray[index], ioWriteQueueArray[index]
        ioRead:read(0, math.huge, readQueue, function(doneReading, data, error)
            local thread = tostring(dispatch.thread())
            trace("read" .. index, readQueue.label,
                string.format("reading file: %s, thread: %s---->", file, thread))
            if error > 0 then
                print(string.format("Error reading file %s, errno: %s", file, dispatch.errno_name(error)))
                recordError("read " .. dispatch.errno_name(error))
                ioRead:close()
                queueGroup:leave()   -- (not in the tutorial: so that the wait below cannot hang)
                return
            end

            -- (the tutorial checks doneReading first; here the last chunk is queued for
            -- writing before the group is left, so the group never empties too early)
            if data ~= nil then
                local bytesRead = #data
                if bytesRead > 0 then
                    queueGroup:enter()
                    ioWrite:write(writeOffsetTemp, data, writeQueue, function(doneWriting, writeData, error)
                        local wthread = tostring(dispatch.thread())
                        trace("write" .. index, writeQueue.label,
                            string.format("writing file: %s, thread: %s---->", file, wthread))
                        if error > 0 then
                            print(string.format("Error writing file %s, errno: %s", file, dispatch.errno_name(error)))
                            recordError("write " .. dispatch.errno_name(error))
                            ioRead:close()
                            queueGroup:leave()
                            return
                        end
                        if doneWriting then
                            queueGroup:leave()
                        end
                        trace("write" .. index, writeQueue.label,
                            string.format("---->writing file: %s, thread: %s", file, wthread))
                    end)
                    writeOffsetTemp = writeOffsetTemp + bytesRead
                end
            end

            if doneReading then
                ioRead:close()
                queueGroup:leave()
            end
            trace("read" .. index, readQueue.label,
                string.format("---->reading file: %s, thread: %s", file, thread))
        end)
    end)
end
queueGroup:wait()   -- .distantFuture
ioWrite:close()

local finished = writeFinished:wait(60)
for _, q in ipairs({ ioReadQueue1, ioReadQueue2, ioWriteQueue1, ioWriteQueue2 }) do
    local nums = {}
    for n in pairs(threadsOf[q.label] or {}) do nums[#nums + 1] = n end
    table.sort(nums)
    print(string.format("(%s ran on thread(s) %s)", q.label, table.concat(nums, ", ")))
end

-------------------------------------------------------------------- verification
local hIn, nIn = scenario.checksum(files)
local hOut, nOut = scenario.checksum({ outFile })
print(string.format("input parts: %d bytes, checksum %016x", nIn, hIn))
print(string.format("output file: %d bytes, checksum %016x", nOut, hOut))

scenario.check(finished and #errors == 0, "the write channel finished without errors")
scenario.check(nOut == 2 * size and nOut == nIn, "the output size is the sum of the parts")
scenario.check(hOut == hIn, "the output equals the concatenation of the parts (checksum)")

scenario.rmtree(dir)
