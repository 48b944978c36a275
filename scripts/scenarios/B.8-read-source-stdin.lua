-- title: Read source on standard input, cancelled at end of file
-- seed: 004 (22.10.2 Dispatch sources: reading files)
-- expect: 4 checks
--
-- The chapter's read source (its listing is a picture): standard input is set
-- to non-blocking mode, a DISPATCH_SOURCE_TYPE_READ source on STDIN_FILENO
-- runs its handler on a global queue, reads up to a buffer's worth (or the
-- bytes available, if fewer) and prints them; at end of file the source
-- cancels itself, and the cancel handler closes the descriptor and releases
-- the source.
--
-- Run by the scenario runner, standard input is data/stdin.txt. From a
-- terminal, type some lines and end with Ctrl-D.

local dispatch = require("dispatch")
local scenario = require("scenario")

local STDIN_FILENO = 0
local BUFSIZE = 1024

-- If standard input is a regular file, note its size, to check that the
-- script read all of it. This asks stat(1) about /proc/<pid>/fd/0 (Linux),
-- so that nothing touches the descriptor's offset (seeking io.stdin would:
-- the C library reads ahead into its buffer). Elsewhere the check is skipped.
local stdinSize
do
  local p = io.popen("stat -L -c '%F:%s' /proc/" .. dispatch.pid() .. "/fd/0 2>/dev/null")
  if p then
    local out = p:read("a") or ""
    p:close()
    local kind, size = out:match("^([^:]*):(%d+)")
    if kind == "regular file" or kind == "regular empty file" then stdinSize = tonumber(size) end
  end
end

dispatch.fd.set_nonblocking(STDIN_FILENO)

local readChunks = {}
local finished = false
local closed = false
local stdinSource

stdinSource = dispatch.source.read{
  fd = STDIN_FILENO,
  queue = dispatch.global("default"),
  handler = function()
    if finished then return end
    local available = stdinSource.data
    -- Read until the descriptor would block or reaches end of file. (The
    -- chapter reads once per event; on Linux, libdispatch reports a pipe's
    -- readiness once per change, so a handler that leaves data or the end of
    -- file unread may never be called again.)
    while true do
      local want = BUFSIZE
      if available > 0 and available < want then want = available end
      available = 0
      local chunk, msg, err = dispatch.fd.read(STDIN_FILENO, want)
      if chunk == nil then
        local name = type(err) == "number" and dispatch.errno_name(err) or tostring(err)
        if name == "EAGAIN" or name == "EWOULDBLOCK" then return end   -- wait for the next event
        print("read error: " .. tostring(msg))
        finished = true
        stdinSource:cancel()
        return
      elseif #chunk > 0 then
        readChunks[#readChunks + 1] = chunk
        local line = "Got data from stdin: " .. chunk
        io.write(line)
        if chunk:sub(-1) ~= "\n" then io.write("\n") end
        io.flush()
      else
        -- End of file: the source cancels itself.
        print("end of file on " .. tostring(dispatch.thread()) .. "; cancelling the source")
        finished = true
        stdinSource:cancel()
        return
      end
    end
  end,
  cancel_handler = function()
    dispatch.fd.close(STDIN_FILENO)
    -- The descriptor is really closed: reading it now fails with EBADF.
    local r, _, e = dispatch.fd.read(STDIN_FILENO, 1)
    local ename = type(e) == "number" and dispatch.errno_name(e) or tostring(e)
    closed = (r == nil and ename == "EBADF")
    print("cancel handler: standard input closed (a read now fails with " .. ename .. ")")
    local input = table.concat(readChunks)
    print(string.format("read and echoed %d bytes in %d chunk(s)", #input, #readChunks))
    scenario.check(finished, "the source was cancelled at end of file")
    scenario.check(closed, "the cancel handler closed the descriptor")
    if stdinSize then
      scenario.check(#input == stdinSize, "all " .. stdinSize .. " bytes of the standard input file were read")
      local fixture = io.open(scenario.data("stdin.txt"), "rb")
      if fixture then
        local expected = fixture:read("a")
        fixture:close()
        if #expected == stdinSize then
          scenario.check(input == expected, "the input read equals the bundled data/stdin.txt")
        end
      end
    end
  end,
}
if stdinSource then
  stdinSource:resume()
else
  -- Some descriptors cannot be watched on Linux (epoll refuses /dev/null, for one): the
  -- runtime says so instead of making a source that would never fire.
  local _, msg, ename = dispatch.source.read{fd = STDIN_FILENO}
  print(("standard input cannot be watched (%s: %s); run with input, e.g. < data/stdin.txt"):format(ename, msg))
  scenario.check(ename == "EPERM", "an unwatchable standard input is reported, not left hanging")
end
