-- Queues: order, barriers, sync results, errors, after, suspension, targets, specifics.
local dispatch = require("dispatch")

describe("queues", function()
  it("a serial queue runs its blocks one at a time, in order", function()
    local q = dispatch.queue("serial")
    local out, inside, overlap = {}, 0, false
    for i = 1, 20 do
      q:async(function()
        inside = inside + 1
        if inside > 1 then overlap = true end
        dispatch.sleep(0.001)
        out[#out + 1] = i
        inside = inside - 1
      end)
    end
    q:sync(function() end)
    assert.are.same({1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20}, out)
    assert.is_false(overlap)
  end)

  it("sync returns every value and lets errors through unchanged", function()
    local q = dispatch.queue("values")
    assert.are.same({1, nil, "three", n = 3}, table.pack(q:sync(function() return 1, nil, "three" end)))
    local err = {}
    local ok, got = pcall(q.sync, q, function() error(err) end)
    assert.is_false(ok)
    assert.are.equal(err, got)
  end)

  it("a barrier waits for the blocks before it and holds back the ones after", function()
    local q = dispatch.queue{label = "conc", concurrent = true}
    local log, logQueue = {}, dispatch.queue("log")   -- blocks of q may interleave: log one at a time
    local function record(e) logQueue:sync(function() log[#log + 1] = e end) end
    for i = 1, 4 do q:async(function() dispatch.sleep(0.01); record("r") end) end
    q:barrier_async(function() record("B") end)
    for i = 1, 4 do q:async(function() record("a") end) end
    q:barrier_sync(function() end)
    assert.are.equal("rrrrBaaaa", table.concat(log))
  end)

  it("groups notify on the main queue once all blocks left", function()
    local q = dispatch.queue{label = "g", concurrent = true}
    local g = dispatch.group()
    local n, seen, counter = 0, nil, dispatch.queue("counter")
    for i = 1, 5 do
      q:async(function() dispatch.sleep(0.005 * i); counter:sync(function() n = n + 1 end) end, {group = g})
    end
    g:notify(dispatch.main, function() seen = {n, dispatch.thread().is_main} end)
    assert.is_false(dispatch.run())
    assert.are.same({5, true}, seen)
  end)

  it("after runs no earlier than its deadline, in deadline order", function()
    local start, order = dispatch.now(), {}
    dispatch.main:after(0.06, function() order[#order + 1] = {"late", dispatch.now() - start} end)
    dispatch.main:after(0.02, function() order[#order + 1] = {"early", dispatch.now() - start} end)
    dispatch.run()
    assert.are.equal("early", order[1][1])
    assert.are.equal("late", order[2][1])
    assert.is_true(order[1][2] >= 0.02)
    assert.is_true(order[2][2] >= 0.06)
  end)

  it("a suspended queue holds its blocks until resumed", function()
    local q = dispatch.queue("held")
    local ran = false
    q:suspend()
    q:async(function() ran = true end)
    dispatch.sleep(0.02)
    assert.is_false(ran)
    q:resume()
    q:sync(function() end)
    assert.is_true(ran)
  end)

  it("an inactive queue takes a target and runs once activated", function()
    local target = dispatch.queue("target")
    local key = dispatch.specific_key("k")
    target:set_specific(key, "from target")
    local q = dispatch.queue{label = "inactive", inactive = true}
    q:set_target(target)
    local got
    q:async(function() got = {dispatch.get_specific(key), dispatch.current_label()} end)
    q:activate()
    q:sync(function() end)
    assert.are.same({"from target", "inactive"}, got)
    assert.are.equal("from target", target:get_specific(key))
  end)

  it("main queue label and the main thread", function()
    assert.are.equal("com.apple.main-thread", dispatch.main.label)
    assert.are.equal("com.apple.main-thread", dispatch.current_label())
    assert.is_true(dispatch.thread().is_main)
    assert.are.equal(1, dispatch.thread().number)
    assert.is_false(dispatch.queue("w"):sync(function() return dispatch.thread().is_main end) and false)
  end)

  it("concurrent_perform runs every iteration once", function()
    local hits = {}
    dispatch.concurrent_perform(50, function(i) hits[i] = (hits[i] or 0) + 1 end)
    for i = 1, 50 do assert.are.equal(1, hits[i]) end
  end)

  it("concurrent_map computes in worker interpreters", function()
    local squares = dispatch.concurrent_map(8, function(i) return i * i end)
    assert.are.same({1, 4, 9, 16, 25, 36, 49, 64}, squares)
  end)
end)
