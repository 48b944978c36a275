-- Port of swift-corelibs-libdispatch tests/dispatch_debug.c ("Dispatch Debug").
-- checks: 4
--
-- dispatch_debug prints an object's description (to stderr with LIBDISPATCH_LOG=stderr) for
-- the main queue, the default global queue, a timer source (never resumed, due never, 1 s
-- interval, 100 ns leeway) and a group; the C test only requires that this does not crash.
-- Adapted: the description is tostring, printed to stderr, and each is checked to name its
-- object (the queue's label, the source's kind and state, the group). The source is released
-- without ever being resumed, as in C.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local function debug_(obj, what)
    local d = tostring(obj)
    io.stderr:write(what .. ": " .. d .. "\n")
    return d
end

T.start("Dispatch Debug")
local main_q = dispatch.main
T.long("main queue", debug_(main_q, "dispatch_queue_t"):find(main_q.label, 1, true) ~= nil, true)
local default_q = dispatch.global()
T.long("global queue", debug_(default_q, "dispatch_queue_t"):find(default_q.label, 1, true) ~= nil, true)
local s = dispatch.source.timer{deadline = math.huge, interval = 1, leeway = 100e-9, queue = main_q}
T.long("timer source", debug_(s, "dispatch_source_t"), "dispatch.source (timer, suspended)")
local g = dispatch.group()
T.long("group", debug_(g, "dispatch_group_t"):match("^dispatch%.group") ~= nil, true)
s = nil
collectgarbage()
T.stop()
