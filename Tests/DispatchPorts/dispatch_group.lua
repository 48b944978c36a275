-- Port of swift-corelibs-libdispatch tests/dispatch_group.c ("Dispatch Group").
-- checks: 8
--
-- A group of 100 blocks on 100 serial queues empties; a group can be reused; a wait with a
-- timeout shorter than the group's work times out and a second wait succeeds; notify runs on
-- the main queue; and (rdar://problem/11445820) a long run of cycles, each a group of 1-8
-- blocks on fresh serial queues whose notify leaves an outer group, never loses a notify (each
-- cycle's outer wait has 1 s).
-- Scaled down: the sleeping blocks sleep 1.4 s (the C test's 7 s), the wait that must time out
-- lasts 0.2 s and the retry up to 5 s (the C test's 5 s and 5 s: a waiter kept off the cores
-- for 0.4 s between making the group and its wait, which a loaded machine did, saw the
-- group done); 2,000 notify cycles instead of 200,000. The progress line every tenth of the cycles is
-- kept, on stderr. Added: the last notify seen is the last cycle's.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local LOOP_COUNT = 2000
local scale = 0.2

local function create_group(count, delay)
    local group = dispatch.group()
    for _ = 1, count do
        local queue = dispatch.queue()
        queue:async(function()
            if delay > 0 then
                io.stderr:write("sleeping...\n")
                dispatch.sleep(delay)
                io.stderr:write("done.\n")
            end
        end, {group = group})
    end
    return group
end

local completed = 0
local rq, nq -- dispatch_once'd in C

local function test_group_notify2(cycle, tested)
    if not rq then
        rq = dispatch.queue("release")
        rq:suspend()
        nq = dispatch.queue("notify")
    end
    rq:resume()

    local n = math.random(1, 8)
    local group = dispatch.group()
    local qa = {}
    group:enter()
    for i = 1, n do qa[i] = dispatch.queue(string.format("T%d-%d", cycle, i - 1)) end
    local eh = 0
    for i = 1, n do
        qa[i]:async(function()
            assert(cycle ~= 0, "cycle must be non-zero")
            eh = math.sin((1 / math.pi) / cycle)
        end, {group = group})
    end
    group:leave()

    group:notify(nq, function()
        completed = cycle
        tested:leave()
    end)

    -- The queues of this cycle are released on the next one: a block queued on the suspended
    -- release queue holds them.
    rq:sync(function() end)
    rq:suspend()
    rq:async(function() qa = nil end)
end

local function test_group_notify()
    local tested = dispatch.group()
    T.ptr_notnull("dispatch_group_create", tested)
    local i = 1
    while i <= LOOP_COUNT do
        if i % (LOOP_COUNT // 10) == 0 then io.stderr:write(string.format("#%d\n", i)) end
        tested:enter()
        test_group_notify2(i, tested)
        if not tested:wait(1) then break end
        i = i + 1
    end
    T.long("dispatch_group_notify", i - 1, LOOP_COUNT)
    T.long("last notify seen", completed, LOOP_COUNT)
    rq:resume()
    T.stop()
end

local function test_group()
    local group = create_group(100, 0)
    T.ptr_notnull("dispatch_group_async", group)
    group:wait()

    -- should be OK to re-use a group
    dispatch.global():async(function() end, {group = group})
    group:wait()

    group = create_group(3, 7 * scale)
    T.ptr_notnull("dispatch_group_async", group)
    local res = group:wait(1 * scale)
    T.long("dispatch_group_wait (timed out)", res, false)
    -- retry after timeout (this time succeed)
    res = group:wait(25 * scale)
    T.long("dispatch_group_wait", res, true)

    group = create_group(100, 0)
    group:notify(dispatch.main, function()
        T.long("Notification Received on the main queue", dispatch.current_label(), dispatch.main.label)
        dispatch.main:async(test_group_notify)
    end)
end

T.start("Dispatch Group")
dispatch.main:async(test_group)
