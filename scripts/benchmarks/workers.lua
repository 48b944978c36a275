-- Worker pools and channels, as a user measures them: this script run by the `luadispatch` CLI,
-- against luv under stock lua5.4 (luv_jobs.lua) and a native Swift program
-- (Sources/luadispatch-native). Prints its figures on one line.
--   jobs N           jobs/s: N pool:submit(x * 2) on the default pool, each notify on a serial
--                    queue (luv_jobs.lua does the same with uv.new_work)
--   parallel N REPS  ms: two equal CPU-bound jobs (primes below N) on two workers, and the same two
--                    one after the other; best of REPS alternating rounds: "serial MS parallel MS"
--   channel N        messages/s: one worker sends the integers 1..N, another receives them
-- usage: luadispatch run workers.lua MODE N [REPS]
local dispatch = require("dispatch")
local mode, n, reps = ...
n = math.tointeger(tonumber(n or "")) or 100000
reps = math.tointeger(tonumber(reps or "")) or 3

if mode == "jobs" then
  local pool = dispatch.workers{}
  local results = dispatch.queue("bench.results")
  -- Warm every worker (its interpreter is made on its first job), as luv's pool is warm.
  for _ = 1, pool.count * 2 do pool:submit(function() end):wait() end
  local done, sum = 0, 0
  local t0
  local function double(x) return x * 2 end
  local function collect(_, r)
    sum = sum + r
    done = done + 1
    if done == n then
      local t = dispatch.now() - t0
      assert(sum == n * (n + 1), "lost results")
      print(n / t)
      pool:close()
    end
  end
  t0 = dispatch.now()
  for i = 1, n do pool:submit(double, i):notify(results, collect) end
elseif mode == "parallel" then
  local function count(limit)
    local found = 0
    for k = 2, limit do
      local prime, d = true, 2
      while d * d <= k do
        if k % d == 0 then prime = false; break end
        d = d + 1
      end
      if prime then found = found + 1 end
    end
    return found
  end
  local pool = dispatch.workers{count = 2}
  local warm = {pool:submit(count, 10), pool:submit(count, 10)}
  warm[1]:wait(); warm[2]:wait()
  local best = {serial = math.huge, parallel = math.huge}
  local function serial()
    local t0 = dispatch.now()
    local _, a = pool:submit(count, n):wait()
    local _, b = pool:submit(count, n):wait()
    assert(a == b)
    best.serial = math.min(best.serial, dispatch.now() - t0)
  end
  local function parallel()
    local t0 = dispatch.now()
    local ja, jb = pool:submit(count, n), pool:submit(count, n)
    local _, a = ja:wait()
    local _, b = jb:wait()
    assert(a == b)
    best.parallel = math.min(best.parallel, dispatch.now() - t0)
  end
  for r = 1, reps do
    if r % 2 == 1 then serial(); parallel() else parallel(); serial() end
  end
  pool:close()
  print(("serial %.1f ms parallel %.1f ms"):format(best.serial * 1000, best.parallel * 1000))
elseif mode == "channel" then
  local pool = dispatch.workers{count = 2}
  local ch = dispatch.channel{}
  local t0 = dispatch.now()
  local producer = pool:submit(function(c, count)
    for i = 1, count do c:send(i) end
  end, ch, n)
  local consumer = pool:submit(function(c, count)
    local sum = 0
    for _ = 1, count do sum = sum + c:receive() end
    return sum
  end, ch, n)
  producer:wait()
  local _, sum = consumer:wait()
  local t = dispatch.now() - t0
  assert(sum == n * (n + 1) // 2, "lost messages")
  pool:close()
  print(n / t)
else
  error("usage: workers.lua jobs|parallel|channel N [REPS]")
end
