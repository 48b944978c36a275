-- Port of swift-corelibs-libdispatch tests/dispatch_overcommit.c ("Dispatch Overcommit").
-- checks: 33
--
-- 32 serial queues on the overcommitting global queue each run one block that counts itself
-- and then spins until all 32 have counted: this only ends if every block gets a thread of its
-- own although they never finish (overcommit). The C test's queues target
-- dispatch_get_global_queue(0, DISPATCH_QUEUE_OVERCOMMIT); a Lua serial queue with the default
-- target is served by that same overcommitting root queue (the Swift overlay has no overcommit
-- flag). Adapted: the spin sleeps 1 ms per round (dispatch.sleep), since a Lua loop that never
-- waits would keep the interpreter from the other blocks; the thread stays occupied as in C.
-- The count is kept under a semaphore (OSAtomicIncrement32). Nothing scaled down.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local count = T.counter()
local final = 32
local stopped = false

T.start("Dispatch Overcommit")
for i = 0, final - 1 do
    local queue = dispatch.queue(string.format("test.overcommit.%d", i))
    T.ptr_notnull("dispatch_queue_create", queue)
    queue:async(function()
        if count:add(1) == final then
            T.long("count", count:get(), final)
            stopped = true
            T.stop()
        else
            while not stopped do dispatch.sleep(0.001) end -- spin
        end
    end)
end
