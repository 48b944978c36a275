-- title: Global queues by priority; serial, concurrent and inactive queues
-- seed: 003 (Creating and managing dispatch queues)
--
-- Apple's dispatch queue guide, "Getting the global concurrent dispatch
-- queues", "Creating serial dispatch queues" (with the translator's note on
-- DISPATCH_QUEUE_SERIAL_INACTIVE / _CONCURRENT / _CONCURRENT_INACTIVE) and
-- "Getting common queues at runtime":
--
--   dispatch_queue_t aQueue = dispatch_get_global_queue(DISPATCH_QUEUE_PRIORITY_DEFAULT, 0);
--   queue = dispatch_queue_create("com.example.MyQueue", NULL);
--   dispatch_get_main_queue();  dispatch_get_current_queue();
--
-- The priorities map onto qualities of service: HIGH = user_initiated,
-- DEFAULT = default, LOW = utility, BACKGROUND = background.

local dispatch = require("dispatch")
local scenario = require("scenario")

local key = dispatch.specific_key("which queue")

-- 1. The global concurrent queues, one per priority.
local priorities = {
  { "DISPATCH_QUEUE_PRIORITY_HIGH", "user_initiated" },
  { "DISPATCH_QUEUE_PRIORITY_DEFAULT", "default" },
  { "DISPATCH_QUEUE_PRIORITY_LOW", "utility" },
  { "DISPATCH_QUEUE_PRIORITY_BACKGROUND", "background" },
}
local group = dispatch.group()
local ranOn = {}
for _, p in ipairs(priorities) do
  local name, qos = p[1], p[2]
  local q = dispatch.global(qos)
  print(string.format("%-34s -> %s (qos %s, concurrent %s)", name, tostring(q), tostring(q.qos), tostring(q.concurrent)))
  scenario.check(q.concurrent == true, name .. ": the global queue is concurrent")
  scenario.check(q.qos == qos, name .. ": the global queue has qos " .. qos)
  scenario.check(rawequal(dispatch.global(qos), q) or dispatch.global(qos).label == q.label,
    name .. ": asking again gives the same global queue")
  q:async(function()
    ranOn[name] = { thread = dispatch.thread(), label = dispatch.current_label() }
  end, { group = group })
end
-- The default priority is what dispatch.global() gives.
scenario.check(dispatch.global().qos == "default", "dispatch.global() is the default priority queue")
group:wait()
for _, p in ipairs(priorities) do
  local r = ranOn[p[1]]
  print(string.format("block on the %s queue ran on %s, current queue label %s",
    p[2], tostring(r.thread), tostring(r.label)))
  scenario.check(not r.thread.is_main, p[1] .. ": block runs on a pool thread, not the main thread")
end

-- 2. A serial queue: one task at a time, in the order they were added.
local serial = dispatch.queue("com.example.MyQueue")
serial:set_specific(key, "MyQueue")
print(tostring(serial) .. ": label " .. serial.label .. ", concurrent " .. tostring(serial.concurrent))
scenario.check(serial.label == "com.example.MyQueue" and serial.concurrent == false, "dispatch.queue(label) is a serial queue")
local order, running, peak, onQueue = {}, 0, 0, true
for i = 1, 5 do
  serial:async(function()
    running = running + 1
    if running > peak then peak = running end
    if dispatch.get_specific(key) ~= "MyQueue" then onQueue = false end
    dispatch.sleep(scenario.delay(0.05))
    order[#order + 1] = i
    running = running - 1
  end)
end
serial:sync(function() end)   -- FIFO: this runs after the five tasks
print("serial queue ran tasks in order " .. table.concat(order, " ") .. ", at most " .. peak .. " at a time")
scenario.check(table.concat(order, " ") == "1 2 3 4 5", "a serial queue runs tasks in the order they were added")
scenario.check(peak == 1, "a serial queue runs one task at a time")
scenario.check(onQueue, "tasks see the serial queue's specific value")

-- 3. A concurrent queue of our own (DISPATCH_QUEUE_CONCURRENT).
local concurrent = dispatch.queue{ label = "com.example.MyConcurrentQueue", concurrent = true }
print(tostring(concurrent) .. ": concurrent " .. tostring(concurrent.concurrent))
scenario.check(concurrent.concurrent == true, "dispatch.queue{concurrent=true} is a concurrent queue")

-- 4. An inactive serial queue (DISPATCH_QUEUE_SERIAL_INACTIVE): blocks wait
--    until the queue is activated.
local inactive = dispatch.queue{ label = "com.example.InactiveQueue", inactive = true }
local inactiveRan = false
inactive:async(function() inactiveRan = true end)
dispatch.sleep(scenario.delay(0.5))
print("inactive queue, after a pause: block ran = " .. tostring(inactiveRan))
scenario.check(not inactiveRan, "an inactive queue runs nothing before activate")
inactive:activate()
inactive:sync(function() end)
print("after activate: block ran = " .. tostring(inactiveRan))
scenario.check(inactiveRan, "the inactive queue runs its block after activate")

-- 5. The main queue: serial, bound to the main thread. The script itself runs
--    on the main thread; blocks sent to dispatch.main run once it is done.
print("main queue: " .. tostring(dispatch.main) .. ", concurrent " .. tostring(dispatch.main.concurrent))
scenario.check(dispatch.main.concurrent == false, "the main queue is serial")
dispatch.main:async(function()
  local t = dispatch.thread()
  print("block on the main queue runs on " .. tostring(t) .. ", current queue label " .. tostring(dispatch.current_label()))
  scenario.check(t.is_main and t.number == 1, "main queue blocks run on the main thread")
end)
