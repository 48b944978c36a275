-- Stress test: 8 queues (4 serial, 4 concurrent) receive TASKS tasks each from 8 producers.
--
--   luadispatch run scripts/stress/stress.lua [FACTOR]     (TASKS = 100000 * FACTOR, default 1)
--
-- The producers are 8 concurrent blocks on the default global queue; each submits its share
-- (TASKS / 8) to every queue. The task mix (by task number modulo 16):
--   async; sync onto a shared serial queue; barriers; group enter/leave with nested async;
--   a binary semaphore guarding a read-modify-write across a blocking call; a counting
--   semaphore limiting concurrency to 3; concurrent_perform; errors raised inside sync and
--   caught with pcall (and sync-deadlock misuse caught the same way); work items (performed,
--   submitted, cancelled); `after`; errors in async blocks (counted by the error handler);
--   objects (queues, groups, semaphores, work items, sources) created and dropped while in use;
--   dispatch.task coroutines whose waits suspend them (sync, the same binary and counting
--   semaphores the blocks use, sleep, a child task, an await resumed from another queue), on
--   queues of their own: a task that holds the mutex across a wait does not hold its queue, and
--   a block of that queue blocked on the mutex would keep the task from ever resuming.
-- A 1 kHz timer source runs throughout. Every counter is checked exactly at the end; any
-- mismatch raises (exit status 1). The last line is a summary.
local dispatch = require("dispatch")

local factor = tonumber((...) or arg[1] or "1") or error("factor must be a number")
local PRODUCERS, QUEUES = 8, 8
local perProducer = math.max(1, math.floor(100000 * factor / PRODUCERS + 0.5))
local TASKS = perProducer * PRODUCERS          -- tasks per queue
local started = dispatch.now()

-- The queues: 1-4 serial (4 targets 3, so 3 and 4 exclude each other), 5-8 concurrent.
local q = {}
q[1] = dispatch.queue("stress.s1")
q[2] = dispatch.queue{label = "stress.s2", qos = "utility"}
q[3] = dispatch.queue{label = "stress.s3", qos = "user_initiated"}
q[4] = dispatch.queue{label = "stress.s4", target = q[3]}
q[5] = dispatch.queue{label = "stress.c5", concurrent = true}
q[6] = dispatch.queue{label = "stress.c6", concurrent = true, qos = "utility"}
q[7] = dispatch.queue{label = "stress.c7", concurrent = true, qos = "user_initiated"}
q[8] = dispatch.queue{label = "stress.c8", concurrent = true, inactive = true}
q[8]:activate()
local shared = dispatch.queue("stress.shared")
local all = dispatch.group()          -- every task, nested block and handler we wait for
local mutex = dispatch.semaphore(1)   -- binary
local slots = dispatch.semaphore(3)   -- counting
local itemQueue = dispatch.queue("stress.items")
local taskQueues = {dispatch.queue("stress.t1"), dispatch.queue("stress.t2"),
                    dispatch.queue{label = "stress.t3", concurrent = true}, dispatch.queue("stress.t4")}

-- Counters. Blocks that may run at the same time interleave at any instruction (switching),
-- so every counter they share is changed on one serial queue, `stats`, the GCD way: `add` in
-- order and without waiting (what the checks read at the end), `statsSync` where the code reads
-- the value it has just changed. Blocks of one serial queue (1-4; 3 and 4 share a target) never
-- interleave with each other, so the serial queues' `active` counts need no more than that.
local stats = dispatch.queue("stress.stats")
local function add(t, k, d) stats:async(function() t[k] = (t[k] or 0) + (d or 1) end) end
local function statsSync(f) return stats:sync(f) end
local done = {}                    -- per queue: task bodies run
local active, barrierActive = {}, {}
for i = 1, QUEUES do done[i], active[i], barrierActive[i] = 0, 0, false end
local kinds = {}                   -- per kind: tasks run
local expectKinds = {}             -- per kind: tasks submitted (by the producers)
local c = {
  sync = 0, nested = 0, guarded = 0, slotsIn = 0, slotsMax = 0, perform = 0, performCalls = 0,
  pcallErrors = 0, deadlockErrors = 0, itemRuns = 0, cancelledRuns = 0, cancelledItems = 0,
  after = 0, asyncErrors = 0, handled = 0, dropQueueRuns = 0, dropGroupNotified = 0,
  dropSemaphores = 0, waitedItems = 0, sourceFires = 0, sourceCancels = 0, unresumedSources = 0, gcs = 0,
  coroutineTasks = 0, serialOverlap = 0, barrierViolations = 0,
}
local failures = {}
local function fail(msg) stats:async(function() if #failures < 20 then failures[#failures + 1] = msg end end) end

dispatch.set_error_handler(function(message, traceback, label)
  if message:find("stress: expected async error", 1, true) then
    add(c, "handled")
  else
    fail("unexpected uncaught error on " .. tostring(label) .. ": " .. message)
  end
end)

-- A 1 kHz timer for the whole run.
local ticks, timerRuns = 0, 0
local timerQueue = dispatch.queue("stress.timer")
local timer = dispatch.source.timer{interval = 0.001, leeway = 0, queue = timerQueue}
timer:set_event_handler(function() ticks = ticks + timer.data; timerRuns = timerRuns + 1 end)
local timerDone = dispatch.group()
timerDone:enter()
timer:set_cancel_handler(function() timerDone:leave() end)
timer:resume()

-- Sources kept alive only by this table until their handler cancels them.
local liveSources, nextSource = {}, 0

local function enterActive(qi)
  if qi <= 4 then
    active[qi] = active[qi] + 1
    -- Queues 3 and 4 share a target: together they are one serial context.
    local n = (qi == 3 or qi == 4) and (active[3] + active[4]) or active[qi]
    if n > 1 then add(c, "serialOverlap"); if os.getenv("STRESS_DEBUG") then print("overlap", qi, active[qi], active[3], active[4], debug.traceback()) end end
  else
    statsSync(function() active[qi] = active[qi] + 1 end)
  end
  if barrierActive[qi] then add(c, "barrierViolations") end
end
local function leaveActive(qi)
  if qi <= 4 then active[qi] = active[qi] - 1 else statsSync(function() active[qi] = active[qi] - 1 end) end
end

local function dropObjects(qi, i)
  local which = (i // 16) % 8
  if which == 0 then
    -- A queue that is dropped while its block is pending and running.
    local tmp = dispatch.queue{label = "stress.tmp", concurrent = (i % 2 == 0)}
    all:enter()
    tmp:async(function() add(c, "dropQueueRuns"); all:leave() end)
  elseif which == 1 then
    -- A group that is dropped while entered; its notify still runs once it is left.
    local g = dispatch.group()
    g:enter()
    all:enter()
    g:notify(q[(qi % QUEUES) + 1], function() add(c, "dropGroupNotified"); all:leave() end)
    q[((qi + 1) % QUEUES) + 1]:async(function() g:leave() end, {group = all})
  elseif which == 2 then
    -- A semaphore dropped below its initial value (the runtime balances it before release).
    local s = dispatch.semaphore(2)
    s:wait(); s:wait()
    add(c, "dropSemaphores")
  elseif which == 3 then
    -- Work items: one cancelled before it is submitted (never runs), one dropped after submit.
    local cancelled = dispatch.work_item(function() add(c, "cancelledRuns") end)
    cancelled:cancel()
    add(c, "cancelledItems")
    q[(qi % QUEUES) + 1]:async(cancelled, {group = all})
  elseif which == 4 then
    -- A data source whose only reference goes once its handler cancels it.
    local src = dispatch.source.data_add{queue = q[(qi % QUEUES) + 1]}
    local id = statsSync(function() nextSource = nextSource + 1; liveSources[nextSource] = src; return nextSource end)
    all:enter()
    src:set_event_handler(function()
      add(c, "sourceFires")
      statsSync(function() liveSources[id]:cancel(); liveSources[id] = nil end)
    end)
    src:set_cancel_handler(function() add(c, "sourceCancels"); all:leave() end)
    src:resume()
    src:merge(1)
  elseif which == 5 then
    -- A source that is never resumed, and a suspended queue and an inactive queue, all dropped.
    local src = dispatch.source.timer{interval = 1}
    src:set_event_handler(function() fail("an unresumed source fired") end)
    local sq = dispatch.queue("stress.suspended")
    sq:suspend()
    local iq = dispatch.queue{label = "stress.inactive", inactive = true}
    add(c, "unresumedSources")
  elseif which == 6 then
    if (i // 128) % 16 == 0 then collectgarbage(); add(c, "gcs") end
  else
    -- A work item submitted to a serial queue, waited for from this block, then dropped.
    local item = dispatch.work_item(function() add(c, "waitedItems") end)
    itemQueue:async(item, {group = all})
    if not item:wait(60) then fail("work item wait timed out") end
  end
end

-- The body of task `i` on queue `qi`; `kind` = i % 16.
local function task(qi, i, kind)
  add(done, qi)
  add(kinds, kind)
  if kind == 1 then
    local v = shared:sync(function() c.sync = c.sync + 1; return i end)
    if v ~= i then fail("sync returned " .. tostring(v) .. ", not " .. i) end
  elseif kind == 2 then
    -- barrier (submitted with barrier_async): nothing else runs on this queue meanwhile.
    if qi > 4 and statsSync(function() return active[qi] end) ~= 0 then add(c, "barrierViolations") end
    barrierActive[qi] = true
    dispatch.sleep(0)   -- let other blocks run Lua: none of this queue's may start
    if qi > 4 and statsSync(function() return active[qi] end) ~= 0 then add(c, "barrierViolations") end
    barrierActive[qi] = false
  elseif kind == 3 then
    all:enter()
    q[(qi + 2) % QUEUES + 1]:async(function()
      add(c, "nested")
      q[(qi + 4) % QUEUES + 1]:async(function() add(c, "nested"); all:leave() end)
    end)
  elseif kind == 4 then
    mutex:wait()
    local v = c.guarded
    shared:sync(function() end)          -- another block could change c.guarded here, but holds no mutex
    c.guarded = v + 1
    mutex:signal()
  elseif kind == 5 then
    slots:wait()
    statsSync(function() c.slotsIn = c.slotsIn + 1; if c.slotsIn > c.slotsMax then c.slotsMax = c.slotsIn end end)
    dispatch.sleep(0)
    statsSync(function() c.slotsIn = c.slotsIn - 1 end)
    slots:signal()
  elseif kind == 6 then
    if (i // 16) % 8 == 0 then
      add(c, "performCalls")
      dispatch.concurrent_perform(4, function(j) add(c, "perform", j) end)
    end
  elseif kind == 7 then
    local ok, err = pcall(shared.sync, shared, function() error({code = i}) end)
    if ok or type(err) ~= "table" or err.code ~= i then fail("sync error not propagated: " .. tostring(err)) end
    add(c, "pcallErrors")
    if qi <= 4 then
      local ok2, err2 = pcall(q[qi].sync, q[qi], function() end)
      if ok2 or not tostring(err2):find("would deadlock", 1, true) then fail("sync onto own queue: " .. tostring(err2)) end
      add(c, "deadlockErrors")
    end
  elseif kind == 9 then
    add(c, "after")
    all:leave()
  elseif kind == 10 then
    if i % 997 == 10 then error("stress: expected async error " .. i) end
  elseif kind == 12 then
    dropObjects(qi, i)
  elseif kind == 13 then
    add(c, "itemRuns")
  end
end

-- Kind 14: a dispatch.task on queue qi. Its waits suspend it, so it shares the semaphores with
-- blocked threads, and its steps interleave with the queue's blocks (no active bracket).
local function coroutineTask(qi, i)
  add(done, qi)
  add(kinds, 14)
  local v = shared:sync(function() c.sync = c.sync + 1; return i end)
  if v ~= i then fail("sync in a task returned " .. tostring(v) .. ", not " .. i) end
  mutex:wait()
  local g = c.guarded
  dispatch.sleep(0)                      -- other blocks and tasks run: none holds the mutex
  c.guarded = g + 1
  mutex:signal()
  slots:wait()
  statsSync(function() c.slotsIn = c.slotsIn + 1; if c.slotsIn > c.slotsMax then c.slotsMax = c.slotsIn end end)
  dispatch.sleep(0)
  statsSync(function() c.slotsIn = c.slotsIn - 1 end)
  slots:signal()
  local child = dispatch.task(function() dispatch.sleep(0); return i * 2 end, taskQueues[(qi + 1) % #taskQueues + 1])
  local ok, r = child:wait(60)
  if not ok or r ~= i * 2 then fail("child task " .. i .. ": " .. tostring(ok) .. " " .. tostring(r)) end
  local a = dispatch.await(function(resume) q[(qi + 2) % QUEUES + 1]:async(function() resume(i) end) end)
  if a ~= i then fail("await in task " .. i .. " gave " .. tostring(a)) end
  add(c, "coroutineTasks")
end

-- What producer p submits to queue qi as task number i (1-based, unique per queue).
local function submit(qi, i)
  local kind = i % 16
  local queue = q[qi]
  add(expectKinds, kind)
  if kind == 2 then
    queue:barrier_async(function() task(qi, i, kind) end)
    -- barrier_async takes no group: count it with enter/leave around an extra block.
    all:enter()
    queue:async(function() all:leave() end)
  elseif kind == 9 then
    all:enter()
    queue:after(0, function() task(qi, i, kind) end)
  elseif kind == 13 then
    local item = dispatch.work_item(function() task(qi, i, kind) end, {barrier = (i % 32 == 13)})
    queue:async(item, {group = all})
  elseif kind == 11 then
    queue:async(function() task(qi, i, kind) end, {group = all, barrier = true})
  elseif kind == 10 then
    -- may raise: no active bracket around it
    queue:async(function() task(qi, i, kind) end, {group = all})
  elseif kind == 14 then
    all:enter()
    dispatch.task(function() coroutineTask(qi, i); all:leave() end, taskQueues[qi % #taskQueues + 1])
  else
    queue:async(function() enterActive(qi); task(qi, i, kind); leaveActive(qi) end, {group = all})
  end
end

-- The producers: 8 concurrent blocks, each submitting its share to every queue. Each one
-- releases the interpreter every 64 submissions so that tasks run while producers produce.
local producers = dispatch.group()
for p = 1, PRODUCERS do
  dispatch.global():async(function()
    local base = (p - 1) * perProducer
    for k = 1, perProducer do
      for qi = 1, QUEUES do submit(qi, base + k) end
      if k % 8 == 0 then dispatch.sleep(0) end
    end
  end, {group = producers})
end
-- Meanwhile, from the main thread: concurrent_perform at top level too.
dispatch.concurrent_perform(8, function(j) add(c, "perform", j) end)
add(c, "performCalls")

local limit = tonumber(os.getenv("STRESS_TIMEOUT") or "600")
local function state()
  stats:sync(function() end)
  local parts = {}
  for qi = 1, QUEUES do parts[#parts + 1] = q[qi].label .. "=" .. done[qi] .. "/" .. active[qi] end
  for k, v in pairs(c) do parts[#parts + 1] = k .. "=" .. tostring(v) end
  for k = 0, 15 do parts[#parts + 1] = "kind" .. k .. "=" .. tostring(kinds[k]) .. "/" .. tostring(expectKinds[k]) end
  return table.concat(parts, " ")
end
if not producers:wait(limit) then error("stress: producers did not finish within " .. limit .. " s: " .. state(), 0) end
if not all:wait(limit) then error("stress: tasks did not finish within " .. limit .. " s: " .. state(), 0) end
local elapsed = dispatch.now() - started
timer:cancel()
assert(timerDone:wait(10), "timer cancel handler did not run")
stats:sync(function() end)   -- every count made
collectgarbage()

-- Exact checks.
local function expect(name, got, want)
  if got ~= want then fail(name .. ": got " .. tostring(got) .. ", expected " .. tostring(want)) end
end
local total, expectedNested, expectedErrors, expectedDeadlock = 0, 0, 0, 0
for qi = 1, QUEUES do
  expect("tasks run on " .. q[qi].label, done[qi], TASKS)
  total = total + done[qi]
end
for kind = 0, 15 do expect("tasks of kind " .. kind, kinds[kind] or 0, expectKinds[kind] or 0) end
-- Recount what each kind should have done, from the task numbers.
local nKind = function(kind) return expectKinds[kind] or 0 end
local performCalls, dropped = 1, {}
for i = 1, TASKS do
  local kind = i % 16
  if kind == 6 and (i // 16) % 8 == 0 then performCalls = performCalls + QUEUES end
  if kind == 10 and i % 997 == 10 then expectedErrors = expectedErrors + QUEUES end
  if kind == 12 then local w = (i // 16) % 8; dropped[w] = (dropped[w] or 0) + QUEUES end
end
expect("sync blocks on the shared queue", c.sync, nKind(1) + nKind(14))
expect("nested async blocks", c.nested, 2 * nKind(3))
expect("mutex-guarded increments", c.guarded, nKind(4) + nKind(14))
expect("dispatch.task coroutines", c.coroutineTasks, nKind(14))
expect("counting semaphore: inside at end", c.slotsIn, 0)
if c.slotsMax > 3 then fail("counting semaphore admitted " .. c.slotsMax .. " > 3") end
expect("concurrent_perform calls", c.performCalls, performCalls)
expect("concurrent_perform iterations sum", c.perform, (performCalls - 1) * 10 + 36)
expect("errors caught from sync", c.pcallErrors, nKind(7))
expect("sync deadlocks refused", c.deadlockErrors, nKind(7) // 2)   -- serial queues are half
expect("after blocks", c.after, nKind(9))
expect("async errors handled", c.handled, expectedErrors)
expect("work items run", c.itemRuns, nKind(13))
expect("cancelled work items run", c.cancelledRuns, 0)
expect("cancelled work items", c.cancelledItems, dropped[3] or 0)
expect("dropped queues' blocks", c.dropQueueRuns, dropped[0] or 0)
expect("dropped groups notified", c.dropGroupNotified, dropped[1] or 0)
expect("dropped semaphores", c.dropSemaphores, dropped[2] or 0)
expect("data sources fired", c.sourceFires, dropped[4] or 0)
expect("data sources cancelled", c.sourceCancels, dropped[4] or 0)
expect("unresumed sources dropped", c.unresumedSources, dropped[5] or 0)
expect("waited work items", c.waitedItems, dropped[7] or 0)
expect("live sources left", next(liveSources), nil)
expect("serial overlaps", c.serialOverlap, 0)
expect("barrier violations", c.barrierViolations, 0)
if ticks < 1 then fail("the 1 kHz timer never fired") end

if #failures > 0 then
  error("stress FAILED:\n  " .. table.concat(failures, "\n  "), 0)
end
print(string.format(
  "stress: ok: %d queues x %d tasks = %d tasks from %d producers in %.2f s; " ..
  "%d sync, %d barrier, %d mutex, %d counting-semaphore, %d nested async, %d concurrent_perform calls, " ..
  "%d pcall'd sync errors, %d refused sync deadlocks, %d handled async errors, %d work items (+%d waited, %d cancelled), " ..
  "%d dropped-object rounds (%d queues, %d groups, %d semaphores, %d sources, %d unresumed sources), %d full GCs; " ..
  "%d dispatch.task coroutines; timer: %d ticks in %d handler runs",
  QUEUES, TASKS, total, PRODUCERS, elapsed, c.sync, nKind(2), c.guarded, nKind(5), c.nested, c.performCalls,
  c.pcallErrors, c.deadlockErrors, c.handled, c.itemRuns, c.waitedItems, c.cancelledItems, nKind(12),
  c.dropQueueRuns, c.dropGroupNotified, c.dropSemaphores, c.sourceCancels, c.unresumedSources, c.gcs,
  c.coroutineTasks, ticks, timerRuns))
