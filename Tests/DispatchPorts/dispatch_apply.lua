-- Port of swift-corelibs-libdispatch tests/dispatch_apply.c ("Dispatch Apply").
-- checks: 6
--
-- dispatch_apply (dispatch.concurrent_perform) of 32 iterations counts 32; three nested
-- applies count 32^3; and an apply still finishes while as many busy blocks as there are CPUs
-- occupy the default global queue (rdar://problem/10718199: apply must not wait for helper
-- threads that never come): the busy blocks have all started before it and none has finished
-- after it.
-- Adapted: the busy blocks spin in Lua rounds of 10,000 additions separated by
-- dispatch.sleep(0), which gives the interpreter up, so that the apply's Lua iterations can run
-- (the interpreter runs one block at a time; a Lua loop that never gives it up would keep the
-- iterations from running at all). The counters are updated under a semaphore (the C test's
-- OSAtomicIncrement32). Nothing scaled down.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

T.start("Dispatch Apply")

local final = 32
local count = T.counter()
local queue = dispatch.global()
T.ptr_notnull("dispatch_get_global_queue", queue)

dispatch.concurrent_perform(final, function() count:add(1) end)
T.long("count", count:get(), final)

count:set(0) -- rdar://problem/9294578
dispatch.concurrent_perform(final, function()
    dispatch.concurrent_perform(final, function()
        dispatch.concurrent_perform(final, function() count:add(1) end)
    end)
end)
T.long("nested count", count:get(), final * final * final)

-- test_apply_contended
local busy_threads_started, busy_threads_finished = T.counter(), T.counter()
local all_done = T.counter()
local n_threads = T.active_cpus()
local grp = dispatch.group()
for _ = 1, n_threads do
    queue:async(function()
        busy_threads_started:add(1)
        local i, j = 0, 0
        while all_done:get() == 0 do
            for _ = 1, 10000 do j = j + i; i = i + 1 end
            dispatch.sleep(0)
        end
        busy_threads_finished:add(1)
    end, {group = grp})
end
while busy_threads_started:get() < n_threads do dispatch.sleep(0.000001) end

local c = T.counter()
local before = busy_threads_started:get()
dispatch.concurrent_perform(final, function() c:add(1) end)
local after = busy_threads_finished:get()

T.long("contended: threads started before apply", before, n_threads)
T.long("contended: count", c:get(), final)
T.long("contended: threads finished before apply", after, 0)

all_done:set(1)
grp:wait()
T.stop()
