-- Port of swift-corelibs-libdispatch tests/dispatch_cascade.c ("Dispatch Cascade").
-- checks: 3
--
-- BLOCKS cursors each cascade down QUEUES serial queues: a block on queue k moves its cursor
-- to k+1 and submits itself there, until (QUEUES * BLOCKS) / 4 steps have run in all; then a
-- histogram of where the cursors stopped is printed and the main queue syncs once onto every
-- queue before the test ends. The C test has no check besides finishing; this port checks
-- that the step count reached zero exactly once, that no cursor went past the last queue, and
-- that every queue answered the final sync.
-- Nothing scaled down. The step counter is updated under a semaphore (the C test's
-- __sync_sub_and_fetch).
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local QUEUES = 80
local BLOCKS = 10000
local done = false
local finished = T.counter()
local queues = {}
local indices = {}
local iterations = T.counter((QUEUES * BLOCKS) // 4)

local function histogram()
    local counts, maxcount = {}, 0
    for q = 0, QUEUES - 1 do counts[q] = 0 end
    for i = 1, BLOCKS do counts[indices[i]] = counts[indices[i]] + 1 end
    for q = 0, QUEUES - 1 do maxcount = math.max(maxcount, counts[q]) end
    print(string.format("maxcount = %d", maxcount))
    for y = 20, 1, -1 do
        local line = {}
        for x = 0, QUEUES - 1 do line[#line + 1] = (counts[x] / maxcount * 20 > y) and "*" or " " end
        print(table.concat(line))
    end
    local past = 0
    for i = 1, BLOCKS do if indices[i] >= QUEUES then past = past + 1 end end
    return past
end

local function cleanup(past)
    T.long("cursors past the last queue", past, 0)
    local answered = 0
    for q = 0, QUEUES - 1 do queues[q]:sync(function() answered = answered + 1 end) end
    T.long("queues answering the final sync", answered, QUEUES)
    T.long("step count reached zero", finished:get(), 1)
    T.stop()
end

local cascade
function cascade(i)
    if done then return end
    local idx = indices[i] + 1
    if idx < QUEUES then
        indices[i] = idx
        queues[idx]:async(function() cascade(i) end)
    end
    if iterations:add(-1) == 0 then
        done = true
        finished:add(1)
        local past = histogram()
        dispatch.main:async(function() cleanup(past) end)
    end
end

T.start("Dispatch Cascade")
for q = 0, QUEUES - 1 do queues[q] = dispatch.queue() end
for i = 1, BLOCKS do
    indices[i] = 0
    cascade(i)
end
