-- Port of swift-corelibs-libdispatch tests/dispatch_readsync.c ("Dispatch Reader/Writer Queues").
-- checks: 6
--
-- A reader/writer queue: n threads each take turns running readers with dispatch_sync on a
-- concurrent queue and, every INTERVAL readers, a writer with dispatch_barrier_async (every
-- tenth time they also drain the queue with a barrier sync while the others pause). Readers
-- and writers sleep 10 ms and then spin BUSY times, counting any moment where a reader sees a
-- writer or a writer a reader. All n readers must have run at once at some point, writers only
-- ever one at a time, and never alongside a reader. Run twice: with the barriers on the queue
-- itself, then (rdar://problem/8186485) on a concurrent queue that the readers' queue targets.
-- Adapted: the n threads are n serial queues (a serial queue runs on the overcommitting root
-- queue, as the C test's DISPATCH_QUEUE_OVERCOMMIT blocks do, so each gets a thread at once);
-- counters are kept under a semaphore (__sync_add_and_fetch). The readers' queue is targeted
-- while inactive, so the second run uses a new one. Scaled down: n = 16 instead of 64 per CPU, LAPS 1,000 instead of 10,000,
-- BUSY 100 instead of 1,000,000 (a Lua loop, run while holding the interpreter).
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local LAPS, INTERVAL, BUSY, N = 1000, 100, 100, 16
local g = dispatch.group()
local r_count, w_count = T.counter(), T.counter()
local workers, readers, writers = T.counter(), T.counter(), T.counter()
local crw, count, drain = T.counter(), T.counter(), T.counter()

local function writer(m)
    local w = writers:add(1)
    if w > m.max then m.max = w end
    dispatch.sleep(0.01)
    for _ = 1, BUSY do if readers:get() > 0 then crw:add(1) end end
    w_count:add(-1)
    writers:add(-1)
    g:leave()
end

local function reader(m)
    local r = readers:add(1)
    if r > m.max then m.max = r end
    dispatch.sleep(0.01)
    for _ = 1, BUSY do if writers:get() > 0 then crw:add(1) end end
    r_count:add(-1)
    readers:add(-1)
end

local function test_readsync(rq, wq, n)
    local mrs, mw = {}, {max = 0}
    r_count:set(LAPS * 2)
    w_count:set(LAPS // INTERVAL)
    workers:set(0); readers:set(0); writers:set(0); crw:set(0); count:set(0)
    for i = 1, n do
        mrs[i] = {max = 0}
        local mr = mrs[i]
        dispatch.queue("worker " .. i):async(function()
            workers:add(1)
            repeat dispatch.sleep(0.1) until workers:get() >= n
            while true do
                local idx = count:add(1)
                if idx > LAPS then break end
                rq:sync(function() reader(mr) end)
                if idx % INTERVAL == 0 then
                    g:enter()
                    wq:barrier_async(function() writer(mw) end)
                end
                rq:sync(function() reader(mr) end)
                if idx % (INTERVAL * 10) == 0 then
                    -- Let the queue drain
                    drain:add(1)
                    dispatch.sleep(0.01)
                    wq:barrier_sync(function() end)
                    drain:add(-1)
                else
                    while drain:get() > 0 do dispatch.sleep(0.001) end
                end
            end
        end, {group = g})
    end
    g:wait()
    local max_readers = 0
    for i = 1, n do max_readers = math.max(max_readers, mrs[i].max) end
    T.sizet("max readers", max_readers, n)
    T.sizet("max writers", mw.max, 1)
    T.sizet("concurrent readers & writers", crw:get(), 0)
end

T.start("Dispatch Reader/Writer Queues")
local n = N
local dq = dispatch.queue{label = "readsync", concurrent = true, inactive = true}
local tq = dispatch.queue{label = "writebarrierasync", concurrent = true}
dq:activate()
test_readsync(dq, dq, n)
dq = dispatch.queue{label = "readsync", concurrent = true, inactive = true}
dq:set_target(tq)
dq:activate()
tq:barrier_sync(function() end) -- wait for changes to take effect
test_readsync(dq, tq, n) -- rdar://problem/8186485
T.stop()
