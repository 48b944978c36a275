-- title: Queue context data with a finalizer-style cleanup
-- seed: 003 (Storing custom context information with a queue; Providing a clean up function for a queue)
-- expect: 3 checks, 0.2 s of work
--
-- Apple's dispatch queue guide:
--
--   void myFinalizerFunction(void *context) {
--       MyDataContext* theData = (MyDataContext*)context;
--       myCleanUpDataContextFunction(theData);
--       free(theData);
--   }
--   dispatch_queue_t createMyQueue() {
--       MyDataContext* data = (MyDataContext*) malloc(sizeof(MyDataContext));
--       myInitializeDataContextFunction(data);
--       dispatch_queue_t serialQueue = dispatch_queue_create("com.example.CriticalTaskQueue", NULL);
--       if (serialQueue) {
--           dispatch_set_context(serialQueue, data);
--           dispatch_set_finalizer_f(serialQueue, &myFinalizerFunction);
--       }
--       return serialQueue;
--   }
--
-- The Lua API has no set_context/set_finalizer. The same thing is done with a
-- queue-specific value (q:set_specific): the queue holds the value while it
-- lives and lets go of it when it is released. The "finalizer" is the value's
-- __gc metamethod, which runs once the queue is gone and the value has been
-- collected.

local dispatch = require("dispatch")
local scenario = require("scenario")

local contextKey = dispatch.specific_key("MyDataContext")
local cleanups = 0
local events = {}

local function myCleanUpDataContextFunction(theData)
  theData.items = nil
end

-- The finalizer: runs when the context is collected after the queue released it.
local contextMeta = {
  __gc = function(theData)
    cleanups = cleanups + 1
    events[#events + 1] = "finalizer"
    print("finalizer: cleaning up " .. theData.name .. " (" .. #theData.items .. " items) on " .. tostring(dispatch.thread()))
    myCleanUpDataContextFunction(theData)
  end,
}

local function myInitializeDataContextFunction(data)
  data.name = "MyDataContext"
  data.items = {}
end

local function createMyQueue()
  local data = setmetatable({}, contextMeta)
  myInitializeDataContextFunction(data)
  local serialQueue = dispatch.queue("com.example.CriticalTaskQueue")
  serialQueue:set_specific(contextKey, data)      -- dispatch_set_context + finalizer
  return serialQueue
end

local queue = createMyQueue()

-- Tasks on the queue reach the context through the queue.
for i = 1, 3 do
  queue:async(function()
    local ctx = dispatch.get_specific(contextKey)
    ctx.items[#ctx.items + 1] = i
    events[#events + 1] = "task " .. i
    print("task " .. i .. " uses context " .. ctx.name .. " on " .. tostring(dispatch.thread()))
  end)
end
queue:sync(function() end)
scenario.check(#events == 3 and cleanups == 0, "the context lives while the queue is in use")
print("context is still alive while the queue is referenced: cleanups = " .. cleanups)

-- Release the queue: drop the last reference and let the collector run.
queue = nil
local started = dispatch.now()
while cleanups == 0 and dispatch.now() - started < 10 do
  collectgarbage()
  collectgarbage()
  dispatch.sleep(0.02)
end
print(string.format("queue released; finalizer ran %d time(s) after %.2f s", cleanups, dispatch.now() - started))

-- More collections must not run it again.
for _ = 1, 3 do
  collectgarbage()
  dispatch.sleep(0.02)
end
scenario.check(cleanups == 1, "the cleanup runs exactly once after the queue is released")
scenario.check(events[#events] == "finalizer", "the cleanup runs after the queue's last task")
