-- dispatch.run, the same in luadispatch and in lua5.4 with the module.
local dispatch = require("dispatch")

describe("dispatch.run", function()
  it("returns false at once when idle, in every mode", function()
    assert.is_false(dispatch.run())
    assert.is_false(dispatch.run("once"))
    assert.is_false(dispatch.run("nowait"))
  end)

  it("once runs one ready main-queue batch and says whether work is left", function()
    local n = 0
    dispatch.main:after(0.01, function() n = n + 1 end)
    dispatch.main:after(0.3, function() n = n + 1 end)
    assert.is_true(dispatch.run("once"))
    assert.are.equal(1, n)
    assert.is_false(dispatch.run())
    assert.are.equal(2, n)
  end)

  it("nowait never waits", function()
    local ran = false
    dispatch.main:after(0.2, function() ran = true end)
    local start = dispatch.now()
    assert.is_true(dispatch.run("nowait"))
    assert.is_true(dispatch.now() - start < 0.15)
    assert.is_false(ran)
    dispatch.run()
    assert.is_true(ran)
  end)

  it("waits for work on other queues too", function()
    local done = false
    dispatch.queue("bg"):async(function() dispatch.sleep(0.02); done = true end)
    assert.is_false(dispatch.run())
    assert.is_true(done)
  end)
end)
