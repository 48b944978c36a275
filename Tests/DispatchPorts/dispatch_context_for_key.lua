-- Port of swift-corelibs-libdispatch tests/dispatch_context_for_key.c ("Dispatch Queue Specific").
-- checks: 8
--
-- rdar://problem/8429188: queue-specific values set from blocks on the queue itself and from
-- other queues are read back with dispatch_queue_get_specific and, through the target queue,
-- with dispatch_get_specific; replacing a value or setting NULL destroys the old one; and
-- releasing the queues destroys what is left, the queue's context included: five destructors
-- in all.
-- Adapted: a value's destructor is its __gc metamethod (each value is a table whose __gc calls
-- the C test's destructor), so the main thread collects garbage while it waits for the group;
-- the queue's context and finalizer are a value under a key of its own ("app"). The queues are
-- created inactive and activated once targeted (setting the target of an active queue is a
-- libdispatch abort that the runtime raises as an error). dispatch_retain/release pairs become
-- Lua references, dropped once the blocks that compare values have run (the C test compares
-- with static strings, which outlive the values).
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local names = {"ctxt for app", "ctxt for key 1", "ctxt for key 2", "ctxt for key 1 bis", "ctxt for key 4"}
local destroyed = T.counter()
local g

local function ctxt(i)
    return setmetatable({name = names[i]}, {__gc = function(self)
        io.stderr:write("destructor of " .. self.name .. "\n")
        destroyed:add(1)
        g:leave()
    end})
end

local function test_context_for_key()
    g = dispatch.group()
    local keys = {app = dispatch.specific_key("app")}
    keys[1], keys[2], keys[5] = dispatch.specific_key("1"), dispatch.specific_key("2"), dispatch.specific_key("4")
    local ctxts = {}
    local q = dispatch.queue{label = "q", inactive = true}
    local tq = dispatch.queue{label = "tq", concurrent = true, inactive = true}
    local ttq = dispatch.global()
    g:enter()
    ctxts[5] = ctxt(5)
    tq:set_specific(keys[5], ctxts[5])
    tq:set_target(ttq)
    tq:activate()
    g:enter()
    ctxts[1] = ctxt(1)
    q:set_specific(keys.app, ctxts[1])   -- dispatch_set_context + dispatch_set_finalizer_f
    q:set_target(tq)
    q:activate()
    q:async(function()
        g:enter()
        ctxts[2] = ctxt(2)
        q:set_specific(keys[1], ctxts[2])
    end)
    local retained = q
    local checked = dispatch.group() -- (the C test compares with static strings; see below)
    checked:enter()
    dispatch.global():async(function()
        g:enter()
        local c3 = ctxt(3)
        ctxts[3] = c3
        retained:set_specific(keys[2], c3)
        dispatch.global():async(function()
            local v = retained:get_specific(keys[2])
            T.ptr("get context for key 2", v, c3)
            retained, v, c3 = nil, nil, nil
            checked:leave()
        end)
    end)
    q:async(function()
        T.ptr("get current context for key 1", dispatch.get_specific(keys[1]), ctxts[2])
        T.ptr("get current context for key 4 (on target queue)", dispatch.get_specific(keys[5]), ctxts[5])
        T.ptr("get context for key 1", q:get_specific(keys[1]), ctxts[2])
    end)
    q:async(function()
        g:enter()
        ctxts[4] = ctxt(4)
        q:set_specific(keys[1], ctxts[4])
        T.ptr("get context for key 1", q:get_specific(keys[1]), ctxts[4])
    end)
    q:async(function()
        q:set_specific(keys[1], nil)
        T.ptr("get context for key 1", q:get_specific(keys[1]), nil)
    end)
    T.ptr("get context for app", q:get_specific(keys.app), ctxts[1])
    -- Release: the queues, and this function's own references to the values, once the blocks
    -- that compare values with them have run (they hold the values they compare with).
    q:sync(function() end)
    checked:wait()
    q, tq, ctxts = nil, nil, nil
end

T.start("Dispatch Queue Specific")
dispatch.main:async(function()
    test_context_for_key()
    -- The destructors run when the collector finds the values: collect while waiting (25 s,
    -- as test_group_wait).
    local deadline = dispatch.now() + 25
    repeat
        collectgarbage()
        collectgarbage()
    until g:wait(0.01) or dispatch.now() > deadline
    T.long("contexts destroyed", destroyed:get(), 5)
    T.stop()
end)
