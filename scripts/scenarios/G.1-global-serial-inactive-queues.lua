-- title: Global queues by priority; serial, concurrent and inactive queues
-- seed: 003 (Creating and managing dispatch queues)
-- expect: 18 checks, 1 s of delays
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

-- Two blocks on `q` that each wait (a moment at most) for the other to start: true if both
-- were running at the same time, which only a concurrent queue allows.
local function overlaps(q)
  local started = { dispatch.semaphore(0), dispatch.semaphore(0) }
  local met = { false, false }
  local g = dispatch.group()
  for i = 1, 2 do
    q:async(function()
      started[i]:signal()
      met[i] = started[3 - i]:wait(scenario.delay(1) + 1)
    end, { group = g })
  end
  g:wait()
  return met[1] and met[2]
end

-- 1. The global concurrent queues, one per priority. Each is concurrent, and each priority has
--    its own worker threads: no thread serves two of them.
local priorities = {
  { "DISPATCH_QUEUE_PRIORITY_HIGH", "user_initiated" },
  { "DISPATCH_QUEUE_PRIORITY_DEFAULT", "default" },
  { "DISPATCH_QUEUE_PRIORITY_LOW", "utility" },
  { "DISPATCH_QUEUE_PRIORITY_BACKGROUND", "background" },
}
local group = dispatch.group()
local ranOn, threadsOf = {}, {}
for _, p in ipairs(priorities) do
  local name, qos = p[1], p[2]
  local q = dispatch.global(qos)
  print(string.format("%-34s -> %s (qos %s)", name, tostring(q), tostring(q.qos)))
  scenario.check(overlaps(q), name .. ": the global queue runs blocks at the same time")
  threadsOf[name] = {}
  for _ = 1, 3 do
    q:async(function()
      ranOn[name] = { thread = dispatch.thread(), label = dispatch.current_label() }
      threadsOf[name][dispatch.thread().number] = true
      dispatch.sleep(scenario.delay(0.02))
    end, { group = group })
  end
end
print("(Dispatch reports no QoS for the default global queue: it is the fallback for work without one)")
group:wait()
local owner, sharedThread = {}, false
for _, p in ipairs(priorities) do
  local r = ranOn[p[1]]
  local nums = {}
  for n in pairs(threadsOf[p[1]]) do
    nums[#nums + 1] = n
    if owner[n] and owner[n] ~= p[1] then sharedThread = true end
    owner[n] = p[1]
  end
  table.sort(nums)
  print(string.format("blocks on the %s queue ran on thread(s) %s, current queue label %s",
    p[2], table.concat(nums, ", "), tostring(r.label)))
  scenario.check(not r.thread.is_main and r.label == dispatch.global(p[2]).label,
    p[1] .. ": its blocks run on pool threads, as blocks of that queue")
end
scenario.check(not sharedThread, "each priority has its own worker threads")
-- The default priority is what dispatch.global() gives.
scenario.check(dispatch.global() == dispatch.global("default"), "dispatch.global() is the default priority queue")

-- 2. A serial queue: one task at a time, in the order they were added.
local serial = dispatch.queue("com.example.MyQueue")
serial:set_specific(key, "MyQueue")
print(tostring(serial) .. ": label " .. serial.label)
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
scenario.check(peak == 1, "a serial queue runs one task at a time, though each task waits a moment")
scenario.check(onQueue, "tasks see the serial queue's specific value")

-- 3. A concurrent queue of our own (DISPATCH_QUEUE_CONCURRENT).
local concurrent = dispatch.queue{ label = "com.example.MyConcurrentQueue", concurrent = true }
local both = overlaps(concurrent)
print(tostring(concurrent) .. ": two blocks ran at the same time: " .. tostring(both))
scenario.check(both, "dispatch.queue{concurrent=true} runs blocks at the same time")

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
--    on the main thread; blocks sent to dispatch.main run once it is done, in order.
print("main queue: " .. tostring(dispatch.main))
local mainOrder, mainThreads = {}, true
for i = 1, 3 do
  dispatch.main:async(function()
    local t = dispatch.thread()
    mainThreads = mainThreads and t.is_main and t.number == 1
    mainOrder[#mainOrder + 1] = i
    if i == 1 then
      print("block on the main queue runs on " .. tostring(t) .. ", current queue label " .. tostring(dispatch.current_label()))
    elseif i == 3 then
      scenario.check(mainThreads, "main queue blocks run on the main thread")
      scenario.check(table.concat(mainOrder, " ") == "1 2 3", "main queue blocks run one after another, in order")
    end
  end)
end
