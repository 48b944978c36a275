-- title: async then sync on one custom queue
-- seed: 003 (Adding a single task to a queue)
-- expect: 4 checks
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
-- In C the first block may run on a worker thread while the caller prints the second line. Here
-- it cannot have run yet: the script keeps the interpreter from the async call to its next
-- blocking call (the sync), and Lua code between two blocking calls is never interleaved. The
-- script says so in one line and checks it.

local dispatch = require("dispatch")
local scenario = require("scenario")

local events = {}
local function say(line)
  events[#events + 1] = line
  print(line)
end

local myCustomQueue = dispatch.queue("com.example.MyCustomQueue")

myCustomQueue:async(function()
  say("Do some work here.")
end)

say("The first block may or may not have run.")
local firstRanBefore = events[1] == "Do some work here."
print("(here it has " .. (firstRanBefore and "" or "not ") .. "run: the script holds the interpreter until its sync call)")

myCustomQueue:sync(function()
  say("Do some more work here.")
  scenario.check(dispatch.thread().is_main, "the sync block runs on the calling (main) thread")
end)

say("Both blocks have completed.")

local function indexOf(line)
  for i, e in ipairs(events) do if e == line then return i end end
end
local first, second, both = indexOf("Do some work here."), indexOf("Do some more work here."), indexOf("Both blocks have completed.")
scenario.check(not firstRanBefore, "the first block had not run yet when the script printed the second line")
scenario.check(first ~= nil and second ~= nil and first < second, "the async block runs before the sync block (FIFO)")
scenario.check(both == #events and both > second, "\"Both blocks have completed.\" is printed after both blocks")
