-- Port of swift-corelibs-libdispatch tests/dispatch_queue_finalizer.c ("Dispatch Queue Finalizer").
-- checks: 3
--
-- A queue's finalizer runs with the context set by the last block the queue ran before its
-- release (blocks submitted before a release run before the release, not thrown away), and a
-- queue whose context is NULL never calls its finalizer.
-- Adapted: a queue's context and finalizer are a queue-specific value whose __gc metamethod is
-- the finalizer (the queue releases its values when it goes; the collector then finalizes
-- them), so the main thread collects garbage until the finalizer has run; identity of the value
-- replaces the C test's random magic pointer. Scaled down: the release comes after 0.25 s
-- instead of 1 s.
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local context = dispatch.specific_key("context")
local finalized = {}

local function finalizer(tag)
    return {__gc = function(self) finalized[#finalized + 1] = {tag, self} end}
end

T.start("Dispatch Queue Finalizer")
local magic = setmetatable({}, finalizer("finalize"))
local magic_watch = T.watch(magic)
local q = dispatch.queue("com.apple.testing.finalizer")
T.ptr_notnull("dispatch_queue_new", q)

local q_null_context = dispatch.queue("com.apple.testing.finalizer.context_null")
q_null_context:set_specific(context, nil)
q_null_context = nil

dispatch.main:after(0.25, function()
    -- Using async to set the context helps test that blocks are run before the release as
    -- opposed to just thrown away.
    do
        local queue, ctxt = q, magic
        queue:async(function()
            ctxt.set_by_block = true
            queue:set_specific(context, ctxt)
        end)
    end
    q, magic = nil, nil
    local deadline = dispatch.now() + 25
    repeat
        collectgarbage()
        collectgarbage()
        dispatch.sleep(0.005)
    until #finalized > 0 or dispatch.now() > deadline
    T.long("finalizer ran", #finalized, 1)
    -- The finalizer got the context the block set, after the block ran.
    local f = finalized[1]
    T.long("correct context", f ~= nil and f[1] == "finalize" and f[2].set_by_block == true and magic_watch[1] == nil, true)
    T.stop()
end)
