-- title: LimitedWorker: at most N blocks at once
-- seed: 002 (Limiting the number of concurrent blocks)
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
-- The script measures how many jobs run at the same time: never more than
-- the limit. (As the Handbook warns, each waiting block holds a thread.)

local dispatch = require("dispatch")
local scenario = require("scenario")

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
    self.semaphore:wait()
    work()
    self.semaphore:signal()
  end)
end

local limit, jobs = 3, 12
local worker = LimitedWorker.new(limit)
local running, peak, finished = 0, 0, 0
local threads = {}
local group = dispatch.group()   -- only to know when every job is done

for i = 1, jobs do
  group:enter()
  worker:enqueueWork(function()
    running = running + 1
    if running > peak then peak = running end
    local t = dispatch.thread()
    threads[t.number] = true
    print(string.format("job %2d starts on %s, %d running", i, tostring(t), running))
    dispatch.sleep(scenario.delay(1))      -- use the limited resource
    running = running - 1
    finished = finished + 1
    group:leave()
  end)
end

group:notify(dispatch.main, function()
  local nthreads = 0
  for _ in pairs(threads) do nthreads = nthreads + 1 end
  print(string.format("%d jobs done, limit %d, peak concurrency %d, %d distinct threads",
    finished, limit, peak, nthreads))
  scenario.check(finished == jobs, "every job ran")
  scenario.check(peak >= 1 and peak <= limit, "measured peak concurrency is never above the limit")
  scenario.check(running == 0, "no job is still running at the end")
end)
