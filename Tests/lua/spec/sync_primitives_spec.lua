-- Semaphores, work items, once, time.
local dispatch = require("dispatch")

describe("semaphores", function()
  it("limit how many blocks run at once", function()
    local q = dispatch.queue{label = "limited", concurrent = true}
    local s, g = dispatch.semaphore(2), dispatch.group()
    local inside, most, counts = 0, 0, dispatch.queue("counts")   -- changed one at a time
    for i = 1, 8 do
      q:async(function()
        s:wait()
        counts:sync(function()
          inside = inside + 1
          most = math.max(most, inside)
        end)
        dispatch.sleep(0.01)
        counts:sync(function() inside = inside - 1 end)
        s:signal()
      end, {group = g})
    end
    assert.is_true(g:wait(10))
    assert.are.equal(2, most)
  end)

  it("time out", function()
    local start = dispatch.now()
    assert.are.same({false, "timeout"}, {dispatch.semaphore(0):wait(0.03)})
    assert.is_true(dispatch.now() - start >= 0.03)
  end)
end)

describe("work items", function()
  it("run, notify and wait", function()
    local n = 0
    local item = dispatch.work_item(function() n = n + 1 end)
    local notified
    item:notify(dispatch.main, function() notified = n end)
    dispatch.queue("items"):async(item)
    assert.is_true(item:wait(5))
    dispatch.run()
    assert.are.equal(1, n)
    assert.are.equal(1, notified)
  end)

  it("do nothing once cancelled", function()
    local ran = false
    local item = dispatch.work_item(function() ran = true end)
    item:cancel()
    assert.is_true(item:is_cancelled())
    item:perform()
    assert.is_false(ran)
  end)
end)

describe("once", function()
  it("runs its function once for every caller", function()
    local calls = 0
    local init = dispatch.once(function() calls = calls + 1; dispatch.sleep(0.01); return "ready", calls end)
    local q, g, got = dispatch.queue{label = "once", concurrent = true}, dispatch.group(), {}
    for i = 1, 4 do q:async(function() got[i] = table.pack(init()) end, {group = g}) end
    g:wait()
    assert.are.equal(1, calls)
    for i = 1, 4 do assert.are.same({"ready", 1, n = 2}, got[i]) end
  end)
end)

describe("time", function()
  it("is arithmetic on deadlines", function()
    local t = dispatch.now()
    assert.is_true((t + 1) - t > 0.999 and (t + 1) - t < 1.001)
    assert.is_true(t < t + 0.5)
    local w = dispatch.walltime("2018-03-08 13:30:00")
    assert.are.equal("2018-03-08 13:30:00", tostring(w))
    assert.are.equal(1520515800, math.floor(w.seconds))
    assert.has_error(function() return t < w end)
  end)
end)
