-- title: Semaphore limiting open file descriptors
-- seed: 003 (Using dispatch semaphores to regulate the use of finite resources)
-- expect: 5 checks, 1 s of delays
--
-- Apple's dispatch queue guide:
--
--   // Create the semaphore, specifying the initial pool size
--   dispatch_semaphore_t fd_sema = dispatch_semaphore_create(getdtablesize() / 2);
--   // Wait for a free file descriptor
--   dispatch_semaphore_wait(fd_sema, DISPATCH_TIME_FOREVER);
--   fd = open("/etc/services", O_RDONLY);
--   // Release the file descriptor when done
--   close(fd);
--   dispatch_semaphore_signal(fd_sema);
--
-- getdtablesize() is read from /proc/self/limits where available. With a
-- real table of hundreds or thousands of slots, a short demo would never
-- reach half of it, so the tasks below use a pretend table of 8 slots
-- (semaphore of 4) and count how many descriptors are open at once.
--
-- The guide does not say where the code runs. Here it is 16 clients, each on a serial
-- queue of its own (each has a thread of its own), so that nothing but the semaphore limits
-- how many files are open at once. Each task keeps its file open until a fifth task has
-- started and waits on the semaphore: from then on, only the semaphore keeps it out. The
-- clients run at the same time, so they keep their counts on a serial queue, one change at a
-- time.

local dispatch = require("dispatch")
local scenario = require("scenario")

local function getdtablesize()
  local f = io.open("/proc/self/limits", "r")
  if f then
    for line in f:lines() do
      local soft = line:match("^Max open files%s+(%d+)")
      if soft then f:close(); return tonumber(soft) end
    end
    f:close()
  end
  return 256
end

local tablesize = getdtablesize()
print(string.format("descriptor table size %d: the guide's semaphore would start at %d", tablesize, tablesize // 2))

local DEMO_TABLE_SIZE = 8
local limit = DEMO_TABLE_SIZE // 2
local fd_sema = dispatch.semaphore(limit)
print(string.format("demo: pretend table of %d slots, semaphore of %d, 16 tasks each opening a file", DEMO_TABLE_SIZE, limit))

-- The guide opens /etc/services; use it if it is there, else a bundled file.
local path = "/etc/services"
do
  local f = io.open(path, "r")
  if f then f:close() else path = scenario.data("words.txt") end
end

local open, peak, opened, failures = 0, 0, 0, 0
local arrived = 0                          -- tasks started (bookkeeping)
local counts = dispatch.queue("counts")    -- every change to the counts above, one at a time
local beyondLimit = dispatch.semaphore(0)  -- signalled when task limit + 1 has started
local limitReached = dispatch.semaphore(0) -- signalled when `limit` files are open
local gate = dispatch.semaphore(0)         -- opened once both have happened
local group = dispatch.group()
for i = 1, 16 do
  local client = dispatch.queue("com.example.client" .. i)
  client:async(function()
    counts:sync(function()
      arrived = arrived + 1
      if arrived == limit + 1 then beyondLimit:signal() end
    end)
    -- Wait for a free file descriptor
    fd_sema:wait()
    local fd = dispatch.fd.open(path, "r")
    if not fd then
      counts:sync(function() failures = failures + 1 end)
    else
      local openNow = counts:sync(function()
        open = open + 1
        opened = opened + 1
        if open > peak then peak = open end
        if opened == limit then limitReached:signal() end
        return open
      end)
      local head = dispatch.fd.read(fd, 32)
      print(string.format("task %2d: fd %d open (%d open now), read %d bytes", i, fd, openNow, head and #head or -1))
      gate:wait(); gate:signal()             -- keep the file open until the gate opens
      dispatch.sleep(scenario.delay(0.2))    -- work with the file
      counts:sync(function() open = open - 1 end)
      -- Release the file descriptor when done
      dispatch.fd.close(fd)
    end
    fd_sema:signal()
  end, { group = group })
end

local seen = limitReached:wait(30) and beyondLimit:wait(30)
print(counts:sync(function()
  return string.format("%d files are open and task %d has started: opening the gate", open, arrived)
end))
gate:signal()

group:notify(dispatch.main, function()
  print(string.format("all tasks done: %d files opened, at most %d open at once (limit %d)", opened, peak, limit))
  scenario.check(seen, "a task beyond the limit started while the limit was reached")
  scenario.check(failures == 0 and opened == 16, "every task opened its file")
  scenario.check(peak <= limit, "never more descriptors open at once than the limit")
  scenario.check(peak == limit, "the limit is reached: " .. limit .. " files were open at once")
  scenario.check(open == 0, "every descriptor was closed")
end)
