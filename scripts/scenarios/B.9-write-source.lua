-- title: Write source: write until done, then cancel
-- seed: 004 (22.10.3 Dispatch sources: writing files)
-- expect: 4 checks, 0.2 s of work
--
-- The chapter describes DISPATCH_SOURCE_TYPE_WRITE without a listing: the
-- source watches a descriptor for buffer space; the descriptor should be in
-- non-blocking mode, and the handler must cope with short writes and errors,
-- because the source does not say how much can be written.
--
-- Here: a pipe whose write end is non-blocking. A write source pushes 1 MiB
-- into it, writing as much as fits each time it fires (the pipe holds far
-- less), and cancels itself when everything is written; its cancel handler
-- closes the write end. A read source on the other end collects the bytes
-- until end of file. The reader starts once the pipe has been found full: a
-- reader started at once may keep up with the writer, and the pipe never fill.

local dispatch = require("dispatch")
local scenario = require("scenario")

-- 1 MiB of recognisable data.
local parts = {}
for i = 1, 16384 do parts[i] = string.format("line %08d of the write-source payload: %020d\n", i, i * 7919) end
local payload = table.concat(parts)
assert(#payload == 16384 * 64)

local readFd, writeFd = dispatch.fd.pipe()
dispatch.fd.set_nonblocking(writeFd)
dispatch.fd.set_nonblocking(readFd)

local written, writeEvents, shortWrites, eagains = 0, 0, 0, 0
local writerDone, writerCancelled = false, false
local received = {}
local receivedBytes = 0
local readerDone = false
local group = dispatch.group()

-- The reader.
local reader
group:enter()
reader = dispatch.source.read{
  fd = readFd,
  queue = dispatch.queue("com.example.reader"),
  handler = function()
    if readerDone then return end
    while true do
      local chunk, _, err = dispatch.fd.read(readFd, 65536)
      if chunk == nil then break end                 -- EAGAIN: wait for the next event
      if #chunk == 0 then                            -- end of file: the writer closed its end
        readerDone = true
        reader:cancel()
        break
      end
      received[#received + 1] = chunk
      receivedBytes = receivedBytes + #chunk
    end
  end,
  cancel_handler = function()
    dispatch.fd.close(readFd)
    group:leave()
  end,
}

-- The reader starts once (when the pipe is first full, or when all is written).
local readerStarted = false
local function startReader()
  if not readerStarted then
    readerStarted = true
    reader:resume()
  end
end

-- The writer.
local writer
group:enter()
writer = dispatch.source.write{
  fd = writeFd,
  queue = dispatch.queue("com.example.writer"),
  handler = function()
    if writerDone then return end
    writeEvents = writeEvents + 1
    while written < #payload do
      local piece = payload:sub(written + 1, written + 16384)
      local n, _, err = dispatch.fd.write(writeFd, piece)
      if n == nil then                               -- the pipe is full (EAGAIN)
        eagains = eagains + 1
        startReader()
        break
      end
      if n < #piece then shortWrites = shortWrites + 1 end
      written = written + n
    end
    if written == #payload then
      writerDone = true
      startReader()
      print(string.format("writer: all %d bytes written in %d handler runs (%d short writes, %d times the pipe was full); cancelling",
        written, writeEvents, shortWrites, eagains))
      writer:cancel()
    end
  end,
  cancel_handler = function()
    writerCancelled = true
    dispatch.fd.close(writeFd)                       -- the reader sees end of file
    print("writer: cancelled, write end closed")
    group:leave()
  end,
}

writer:resume()

group:notify(dispatch.main, function()
  local data = table.concat(received)
  print(string.format("reader: %d bytes received in %d chunks", receivedBytes, #received))
  scenario.check(writerDone and written == #payload, "the write source wrote the whole payload")
  scenario.check(writerCancelled, "the write source cancelled itself when done")
  scenario.check(writeEvents >= 2, "the write source fired more than once (the pipe holds less than the payload)")
  scenario.check(readerDone and data == payload, "the other end received exactly the bytes written")
end)
