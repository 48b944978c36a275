-- Sources (timers, data sources) and dispatch.data / dispatch.io.
local dispatch = require("dispatch")

describe("sources", function()
  it("a repeating timer fires until cancelled", function()
    local q = dispatch.queue("timers")
    local n, cancelled = 0, false
    local s = dispatch.source.timer{deadline = 0.01, interval = 0.01, queue = q}
    s:set_event_handler(function()
      n = n + s.data
      if n >= 3 then s:cancel() end
    end)
    s:set_cancel_handler(function() cancelled = true end)
    s:resume()
    dispatch.run()
    assert.is_true(n >= 3)
    assert.is_true(cancelled)
    assert.is_true(s:is_cancelled())
  end)

  it("a data source merges what it is given", function()
    local got = {}
    local s = dispatch.source.data_add{queue = dispatch.main}
    s:set_event_handler(function() got[#got + 1] = s.data; s:cancel() end)
    s:resume()
    s:merge(2)
    s:merge(3)
    dispatch.run()
    assert.are.same({5}, got)
  end)
end)

describe("data", function()
  it("slices and concatenates without copying", function()
    local d = dispatch.data("hello, ") .. "world"
    assert.are.equal(12, #d)
    assert.are.equal("world", d:sub(8):bytes())
    assert.are.equal("hello", d:bytes(1, 5))
    assert.is_true(d == dispatch.data("hello, world"))
  end)
end)

describe("io", function()
  it("writes and reads a file through channels", function()
    local path = os.tmpname()
    local q = dispatch.queue("io")
    local out = dispatch.io{path = path, mode = "w", queue = q}
    local wrote
    out:write(0, "channel bytes", q, function(done, remaining, errno)
      if done then wrote = errno; out:close() end
    end)
    dispatch.run()
    assert.are.equal(0, wrote)
    local chunks = {}
    local input = dispatch.io{path = path, queue = q}
    input:read(0, math.huge, q, function(done, data, errno)
      chunks[#chunks + 1] = data:bytes()
      if done then input:close() end
    end)
    dispatch.run()
    os.remove(path)
    assert.are.equal("channel bytes", table.concat(chunks))
  end)
end)
