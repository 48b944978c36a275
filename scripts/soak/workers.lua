-- Soak of the parallel layer: JOBS small jobs and MESSAGES channel messages across 4 workers, in
-- rounds. Every job's result comes back through a notify on a serial queue and every message is
-- received once (sums checked); resident memory after the last round must be about what it was
-- after the first (at most MAX_GROWTH MiB more; "none" under AddressSanitizer, whose quarantine
-- keeps freed memory resident). Prints a summary and "workers soak: ok", or exits 1 naming what
-- was lost.
--   luadispatch scripts/soak/workers.lua [JOBS] [MESSAGES] [ROUNDS] [MAX_GROWTH]
local dispatch = require("dispatch")

local jobs, messages = tonumber(arg[1]) or 100000, tonumber(arg[2]) or 100000
local rounds = tonumber(arg[3]) or 5
local maxGrowth = arg[4] == "none" and math.huge or (tonumber(arg[4]) or 8) * 1048576
local pool = dispatch.workers{count = 4}
local results = dispatch.queue("soak.results")

local function rss()
  local f = assert(io.open("/proc/self/statm"))
  local pages = tonumber(f:read("a"):match("^%d+%s+(%d+)"))
  f:close()
  return pages * 4096
end

local function fail(what)
  io.stderr:write("workers soak: ", what, "\n")
  os.exit(1)
end

-- n jobs, each returning x * 2 through a notify on a serial queue.
local function runJobs(n, offset)
  local done, sum = 0, 0
  local finished = dispatch.semaphore(0)
  local function collect(ok, v)
    if not ok then fail("job failed: " .. tostring(v)) end
    sum = sum + v
    done = done + 1
    if done == n then finished:signal() end
  end
  local double = function(x) return x * 2 end
  for i = offset + 1, offset + n do pool:submit(double, i):notify(results, collect) end
  finished:wait()
  local expected = 0
  for i = offset + 1, offset + n do expected = expected + 2 * i end
  return done, sum == expected
end

-- n messages: two producer workers send integers and small tables through a bounded channel,
-- two consumer workers receive until it is closed.
local function runMessages(n)
  local ch = dispatch.channel{capacity = 256}
  local half = n // 2
  local producer = function(c, first, last)
    for i = first, last do
      if i % 2 == 0 then c:send(i) else c:send({v = i}) end
    end
  end
  local consumer = function(c)
    local count, sum = 0, 0
    while true do
      local m = c:receive()
      if m == nil then break end
      count, sum = count + 1, sum + (type(m) == "table" and m.v or m)
    end
    return count, sum
  end
  local p1 = pool:submit(producer, ch, 1, half)
  local p2 = pool:submit(producer, ch, half + 1, n)
  local c1, c2 = pool:submit(consumer, ch), pool:submit(consumer, ch)
  p1:wait(); p2:wait()
  ch:close()
  local _, n1, s1 = c1:wait()
  local _, n2, s2 = c2:wait()
  return n1 + n2, s1 + s2 == n * (n + 1) // 2
end

local baseline
local totalJobs, totalMessages = 0, 0
for round = 1, rounds do
  local n, ok = runJobs(jobs // rounds, totalJobs)
  if n ~= jobs // rounds or not ok then fail(("round %d: %d of %d job results, sums %s"):format(round, n, jobs // rounds, ok)) end
  totalJobs = totalJobs + n
  local m, mok = runMessages(messages // rounds)
  if m ~= messages // rounds or not mok then fail(("round %d: %d of %d messages, sums %s"):format(round, m, messages // rounds, mok)) end
  totalMessages = totalMessages + m
  collectgarbage(); collectgarbage()
  if round == 1 then baseline = rss() end
end
local grown = rss() - baseline
pool:close()
print(("workers soak: %d jobs, %d messages, 4 workers, 0 lost; resident memory after round 1 %.1f MiB, grown since %.1f MiB")
  :format(totalJobs, totalMessages, baseline / 1048576, grown / 1048576))
if grown > maxGrowth then fail(("resident memory grew by more than %.0f MiB after the first round"):format(maxGrowth / 1048576)) end
print("workers soak: ok")
