-- Misuse that would make libdispatch abort raises a Lua error naming the object and the rule;
-- bad arguments name the function and the argument. Runs under luadispatch and under lua5.4
-- with the module (see docs/module.md).
local dispatch = require("dispatch")

local function raises(code, ...)
  local fn = assert(load(code, "=spec", "t", setmetatable({dispatch = dispatch}, {__index = _G})))
  local ok, message = pcall(fn)
  assert.is_false(ok, "no error from: " .. code)
  message = tostring(message)
  for _, part in ipairs({...}) do
    assert.is_truthy(message:find(part, 1, true), ("%q does not contain %q"):format(message, part))
  end
  return message
end

describe("misuse", function()
  it("sync onto the running serial queue", function()
    raises("local q = dispatch.queue('self.q'); q:sync(function() q:sync(function() end) end)", "'self.q'", "deadlock")
  end)

  it("sync through a target chain", function()
    raises([[
      local s = dispatch.queue('root.serial')
      local c = dispatch.queue{label = 'leaf', concurrent = true, target = dispatch.queue{label = 'mid', target = s}}
      s:sync(function() c:sync(function() end) end)
    ]], "'leaf'", "'root.serial'", "deadlock")
  end)

  it("main:sync from the main thread", function()
    raises("dispatch.main:sync(function() end)", "main queue", "main thread")
    raises("dispatch.queue{label = 'on-main', target = dispatch.main}:sync(function() end)", "'on-main'", "main")
  end)

  it("barrier_sync onto the running concurrent queue", function()
    raises("local q = dispatch.queue{label = 'cq', concurrent = true}; q:sync(function() q:barrier_sync(function() end) end)", "'cq'", "deadlock")
  end)

  it("resume of a queue that is not suspended", function()
    raises("local q = dispatch.queue('never.suspended'); q:suspend(); q:resume(); q:resume()", "'never.suspended'", "not suspended")
  end)

  it("suspending a global queue", function()
    raises("dispatch.global():suspend()", "global queue")
  end)

  it("leave without enter", function()
    raises("local g = dispatch.group(); g:enter(); g:leave(); g:leave()", "not entered")
  end)

  it("set_target on an active queue, on main, onto itself", function()
    raises("dispatch.queue('busy'):set_target(dispatch.queue('other'))", "'busy'", "active")
    raises("dispatch.main:set_target(dispatch.queue('x'))", "cannot change the target")
    raises("local q = dispatch.queue{label='loop', inactive=true}; q:set_target(q)", "itself")
  end)

  it("waiting on a work item that ran twice", function()
    raises("local i = dispatch.work_item(function() end); i:perform(); i:perform(); i:wait()", "more than once")
  end)

  it("bad numbers", function()
    raises("dispatch.semaphore(-1)", "bad argument #1 to 'semaphore'")
    raises("dispatch.concurrent_perform(-1, print)", "bad argument #1 to 'concurrent_perform'")
    raises("dispatch.concurrent_perform(1.5, print)", "integer")
    raises("dispatch.sleep(0/0)", "bad argument #1 to 'sleep'")
    raises("dispatch.queue('q'):after(0/0, print)", "NaN")
  end)

  it("wrong types name the function and the argument", function()
    raises("dispatch.queue('q'):async(nil)", "bad argument #2 to 'async' (function or dispatch.work_item expected, got nil)")
    raises("dispatch.queue('q'):sync(42)", "bad argument #2 to 'sync' (function or dispatch.work_item expected, got number)")
    raises("local q = dispatch.queue('q'); q.async(dispatch.group(), print)", "bad argument #1 to 'async' (dispatch.queue expected, got dispatch.group)")
    raises("dispatch.semaphore(1):wait('soon')", "bad argument #2 to 'wait'")
    raises("dispatch.global('fastest')", "unknown qos 'fastest'")
    raises("dispatch.run('forever')", "bad argument #1 to 'run' (invalid option 'forever')")
  end)

  it("unknown options and wrong option types name the key", function()
    raises("dispatch.queue{label = 'x', colour = 'red'}", "unknown option 'colour'")
    raises("dispatch.queue{label = 42}", "option 'label': string expected, got number")
    raises("dispatch.queue('q'):async(print, {group = 1})", "option 'group': dispatch.group expected")
    raises("dispatch.work_item(print, {barrier = 'yes'})", "option 'barrier': boolean expected")
    raises("dispatch.walltime{year = 2020, month = 13, day = 1}", "out of range")
  end)

  it("errors carry the caller's position", function()
    assert.are.equal("spec:1:", raises("dispatch.semaphore(-5)"):sub(1, 7))
  end)

  it("dispatch.run inside a block", function()
    local result
    dispatch.main:async(function() result = {pcall(dispatch.run)} end)
    dispatch.run()
    assert.is_false(result[1])
    assert.is_truthy(result[2]:find("cannot be called from a block", 1, true))
  end)
end)
