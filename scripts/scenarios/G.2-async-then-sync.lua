-- title: async then sync on one custom queue
-- seed: 003 (Adding a single task to a queue)
-- expect: 3 checks
--
-- Apple's dispatch queue guide, "Adding a single task to a queue":
--
--   dispatch_queue_t myCustomQueue;
--   myCustomQueue = dispatch_queue_create("com.example.MyCustomQueue", NULL);
--   dispatch_async(myCustomQueue, ^{ printf("Do some work here.\n"); });
--   printf("The first block may or may not have run.\n");
--   dispatch_sync(myCustomQueue, ^{ printf("Do some more work here.\n"); });
--   printf("Both blocks have completed.\n");
--
-- As in C, the first block may run on a worker thread while the caller prints the second line:
-- the script and the block run at the same time, and either may print first. The script says
-- in one line what happened in this run. What is certain is checked: the sync block runs on the
-- calling thread, after the async block (a serial queue runs its blocks in order), and "Both
-- blocks have completed." comes after both. The lines are recorded on a serial queue, one at a
-- time, since the block and the script may print at the same time.

local dispatch = require("dispatch")
local scenario = require("scenario")

local events, eventsQueue = {}, dispatch.queue("events")
local function say(line)
  eventsQueue:sync(function()
    events[#events + 1] = line
    print(line)
  end)
end

local myCustomQueue = dispatch.queue("com.example.MyCustomQueue")

myCustomQueue:async(function()
  say("Do some work here.")
end)

say("The first block may or may not have run.")
local firstRanBefore = eventsQueue:sync(function() return events[1] == "Do some work here." end)
print(firstRanBefore and "(in this run it had already run)" or "(in this run it had not run yet)")

myCustomQueue:sync(function()
  say("Do some more work here.")
  scenario.check(dispatch.thread().is_main, "the sync block runs on the calling (main) thread")
end)

say("Both blocks have completed.")

local function indexOf(line)
  for i, e in ipairs(events) do if e == line then return i end end
end
local first, second, both = indexOf("Do some work here."), indexOf("Do some more work here."), indexOf("Both blocks have completed.")
scenario.check(first ~= nil and second ~= nil and first < second, "the async block runs before the sync block (FIFO)")
scenario.check(both == #events and both > second, "\"Both blocks have completed.\" is printed after both blocks")
