-- title: LimitedWorker: at most N blocks at once
-- seed: 002 (Limiting the number of concurrent blocks)
-- expect: 5 checks, 1.5 s of delays, 1.5 s of work
--
-- The GCD Handbook, "Limiting the number of concurrent blocks": a semaphore
-- created with a count of `limit` used as a resource counter.
--
--   class LimitedWorker {
--       private let concurrentQueue = dispatch_queue_create("com.khanlou.concurrent.queue", DISPATCH_QUEUE_CONCURRENT)
--       private let semaphore: dispatch_semaphore_t
--       init(limit: Int) { semaphore = dispatch_semaphore_create(limit) }
--       func enqueueWork(work: () -> ()) {
--           dispatch_async(concurrentQueue) {
--               dispatch_semaphore_wait(semaphore, DISPATCH_TIME_FOREVER)
--               work()
--               dispatch_semaphore_signal(semaphore)
--           }
--       }
--   }
--
-- The script measures how many jobs run at the same time: never more than the limit. That only
-- shows something when more blocks than the limit are running on pool threads at once, and a
-- concurrent queue on a 2-core machine may run only two or three blocks at once. So each job
-- holds its resource until a block beyond the limit has started (and waits on the semaphore):
-- as the Handbook warns, every waiting block holds a thread, so the pool must grow for it (on
-- Linux, libdispatch adds about one thread a second while all of them are blocked). From then
-- on only the semaphore keeps that block out. The blocks run at the same time, so they keep
-- their counts on a serial queue, one change at a time.

local dispatch = require("dispatch")
local scenario = require("scenario")

local limit, jobs = 2, 6
local arrived = 0                          -- blocks started on a pool thread (bookkeeping)
local counts = dispatch.queue("counts")    -- every change to the counts, one at a time
local beyondLimit = dispatch.semaphore(0)  -- signalled when block limit + 1 has started

local LimitedWorker = {}
LimitedWorker.__index = LimitedWorker

function LimitedWorker.new(limit)
  return setmetatable({
    concurrentQueue = dispatch.queue{ label = "com.khanlou.concurrent.queue", concurrent = true },
    semaphore = dispatch.semaphore(limit),
  }, LimitedWorker)
end

function LimitedWorker:enqueueWork(work)
  self.concurrentQueue:async(function()
    counts:sync(function()
      arrived = arrived + 1
      if arrived == limit + 1 then beyondLimit:signal() end
    end)
    self.semaphore:wait()
    work()
    self.semaphore:signal()
  end)
end

local worker = LimitedWorker.new(limit)
local running, peak, finished = 0, 0, 0
local threads = {}
local limitReached = dispatch.semaphore(0) -- signalled when `limit` jobs first run at once
local limitSeen = false
local gate = dispatch.semaphore(0)         -- opened once that and a block beyond it have happened
local group = dispatch.group()   -- only to know when every job is done

for i = 1, jobs do
  group:enter()
  worker:enqueueWork(function()
    local runningNow = counts:sync(function()
      running = running + 1
      if running > peak then peak = running end
      if running == limit and not limitSeen then limitSeen = true; limitReached:signal() end
      return running
    end)
    local t = dispatch.thread()
    threads[t.number] = true
    print(string.format("job %d starts on %s, %d running", i, tostring(t), runningNow))
    gate:wait(); gate:signal()             -- hold the resource until the gate opens
    dispatch.sleep(scenario.delay(0.5))    -- use the limited resource
    counts:sync(function()
      running = running - 1
      finished = finished + 1
    end)
    group:leave()
  end)
end

local started = dispatch.now()
local seen = limitReached:wait(30) and beyondLimit:wait(30)
print(counts:sync(function()
  return string.format("after %.2f s, %d jobs run and block %d has started on a pool thread: opening the gate",
    dispatch.now() - started, running, arrived)
end))
gate:signal()

group:notify(dispatch.main, function()
  local nthreads = 0
  for _ in pairs(threads) do nthreads = nthreads + 1 end
  print(string.format("%d jobs done, limit %d, peak concurrency %d, %d distinct threads",
    finished, limit, peak, nthreads))
  scenario.check(seen, "a block beyond the limit started while the limit was reached")
  scenario.check(finished == jobs, "every job ran")
  scenario.check(peak <= limit, "measured peak concurrency is never above the limit")
  scenario.check(peak == limit, "the limit is reached: " .. limit .. " jobs ran at once")
  scenario.check(running == 0, "no job is still running at the end")
end)
