-- Sockets (dispatch.net): an echo through a channel, and the failures named as luv names them
-- for the same inputs (luv is installed by scripts/setup --tests).
local dispatch = require("dispatch")
local net = dispatch.net
local uv = require("luv")

describe("net", function()
  it("echoes through a socket channel", function()
    local lfd, port = assert(net.listen{})
    local q = dispatch.queue("net")
    local listener = dispatch.source.read{fd = lfd, queue = q}
    listener:set_event_handler(function()
      local c = net.accept(lfd)
      if not c then return end
      local ch = dispatch.io{fd = c, queue = q, cleanup = function() dispatch.fd.close(c) end}
      ch:read(0, math.huge, q, function(done, data)
        if #data > 0 then ch:write(0, data, q, function() end) end
        if done then ch:barrier(function() net.shutdown(c, "write") end); ch:close() end
      end)
    end)
    listener:resume()
    local reply
    net.connect({port = port}, q, function(fd, err)
      assert(fd, err)
      local ch = dispatch.io{fd = fd, queue = q, cleanup = function() dispatch.fd.close(fd) end}
      ch:write(0, string.rep("spec ", 10000), q, function(done) if done then net.shutdown(fd, "write") end end)
      local got = dispatch.data()
      ch:read(0, math.huge, q, function(done, data)
        got = got .. data
        if done then
          reply = got:bytes()
          ch:close()
          listener:cancel(); dispatch.fd.close(lfd)
        end
      end)
    end)
    dispatch.run()
    assert.are.equal(string.rep("spec ", 10000), reply)
  end)

  it("names a port in use, a refused connection and an unknown host as luv does", function()
    local lfd, port = assert(net.listen{})
    local _, _, ours = net.listen{port = port}
    local server = uv.new_tcp()
    server:bind("127.0.0.1", port)
    local _, _, theirs = server:listen(16, function() end)
    server:close()
    assert.are.equal("EADDRINUSE", ours)
    assert.are.equal(theirs, ours)
    dispatch.fd.close(lfd)

    -- `port` is free now: both are refused.
    local refused = {}
    net.connect({port = port}, dispatch.main, function(fd, err, code) refused.ours = code end)
    local c = uv.new_tcp()
    c:connect("127.0.0.1", port, function(err) refused.theirs = err; c:close() end)
    -- A label longer than DNS allows: refused by the resolver without asking a server.
    local unknown, nowhere = {}, ("x"):rep(64) .. ".invalid"
    net.connect({host = nowhere, port = 80}, dispatch.main, function(fd, err, code) unknown.ours = code end)
    uv.getaddrinfo(nowhere, "80", {socktype = "stream"}, function(err) unknown.theirs = err end)
    uv.run()
    dispatch.run()
    assert.are.equal("ECONNREFUSED", refused.ours)
    assert.are.equal(refused.theirs, refused.ours)
    assert.are.equal("EAI_NONAME", unknown.ours)
    assert.are.equal(unknown.theirs, unknown.ours)
  end)
end)
