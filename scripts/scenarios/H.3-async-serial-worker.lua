-- title: AsyncSerialWorker: flatten an async completion with a semaphore
-- seed: 002 (Flattening a completion block)
-- expect: 2 checks, 2 s of delays
--
-- The GCD Handbook, "Flattening a completion block". A semaphore turns an
-- asynchronous API into a blocking call (on a background queue only):
--
--   dispatch_semaphore_t semaphore = dispatch_semaphore_create(0)
--   doSomeExpensiveWorkAsynchronously(completionBlock: {
--       dispatch_semaphore_signal(semaphore)
--   })
--   dispatch_semaphore_wait(semaphore, DISPATCH_TIME_FOREVER)
--
-- and AsyncSerialWorker uses that to run asynchronous jobs strictly one after
-- the other: each job holds the serial queue until it calls its done block.

local dispatch = require("dispatch")
local scenario = require("scenario")

-- An asynchronous API we "cannot modify": it does its work on a global queue
-- and calls the completion block when finished.
local function doSomeExpensiveWorkAsynchronously(seconds, completionBlock)
  dispatch.global("default"):async(function()
    dispatch.sleep(scenario.delay(seconds))
    completionBlock()
  end)
end

-- class AsyncSerialWorker
local AsyncSerialWorker = {}
AsyncSerialWorker.__index = AsyncSerialWorker

function AsyncSerialWorker.new()
  return setmetatable({ serialQueue = dispatch.queue("com.khanlou.serial.queue") }, AsyncSerialWorker)
end

-- func enqueueWork(work: WorkBlock), WorkBlock = (DoneBlock) -> ()
function AsyncSerialWorker:enqueueWork(work)
  self.serialQueue:async(function()
    local semaphore = dispatch.semaphore(0)
    work(function()
      semaphore:signal()
    end)
    semaphore:wait()
  end)
end

local part2   -- defined below

-- Part 1: flatten one completion block, on a background queue.
dispatch.global("default"):async(function()
  print("part 1: waiting for the asynchronous work on " .. tostring(dispatch.thread()))
  local completed = false
  local semaphore = dispatch.semaphore(0)
  doSomeExpensiveWorkAsynchronously(0.5, function()
    completed = true
    print("part 1: completion block on " .. tostring(dispatch.thread()))
    semaphore:signal()
  end)
  semaphore:wait()
  print("part 1: the expensive asynchronous work is now done")
  scenario.check(completed, "the semaphore wait returns only after the completion block ran")
  dispatch.main:async(part2)
end)

-- Part 2: five asynchronous jobs. Job 1 takes the longest and job 5 the
-- shortest, so without the worker they would finish in reverse order.
function part2()
  local jobs = 5
  local events = {}
  local worker = AsyncSerialWorker.new()
  for i = 1, jobs do
    worker:enqueueWork(function(done)
      events[#events + 1] = "start " .. i
      print(string.format("job %d starts (%.2f s of async work)", i, 0.1 * (jobs - i + 1)))
      doSomeExpensiveWorkAsynchronously(0.1 * (jobs - i + 1), function()
        events[#events + 1] = "finish " .. i
        print("job " .. i .. " finishes")
        done()
      end)
    end)
  end

  -- The serial queue runs this only after every job has called done().
  worker.serialQueue:async(function()
    dispatch.main:async(function()
      print("events: " .. table.concat(events, ", "))
      local expected = {}
      for i = 1, jobs do
        expected[#expected + 1] = "start " .. i
        expected[#expected + 1] = "finish " .. i
      end
      scenario.check(table.concat(events, ",") == table.concat(expected, ","),
        "jobs finish strictly in submission order, each starting after the previous one finished")
    end)
  end)
end
