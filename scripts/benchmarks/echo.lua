-- Loopback echo through dispatch.net and DispatchIO channels, server and clients in one script:
-- the Lua side of the `net_echo` row.
-- usage: luadispatch run echo.lua CONNECTIONS BYTES   prints "MB/s SECONDS"
local dispatch = require("dispatch")
local net = dispatch.net
local conns, size = tonumber(arg[1]) or 20, tonumber(arg[2]) or 4194304
local payload = dispatch.data(string.rep("0123456789abcdef", size // 16))
assert(#payload == size)

-- The server: a read source on the listening socket, a channel per connection echoing each chunk.
local lfd, port = assert(net.listen{backlog = 1024})
local server = dispatch.queue{label = "echo.server", concurrent = true}
local listener = dispatch.source.read{fd = lfd, queue = dispatch.queue("echo.accept")}
listener:set_event_handler(function()
  while true do
    local c = net.accept(lfd)
    if not c then return end
    local ch = dispatch.io{fd = c, queue = server, cleanup = function() dispatch.fd.close(c) end}
    ch:read(0, math.huge, server, function(done, data, err)
      if #data > 0 then ch:write(0, data, server, function() end) end
      if done then
        ch:barrier(function() net.shutdown(c, "write") end)
        ch:close()
      end
    end)
  end
end)
listener:resume()

-- The clients, on a concurrent queue: each writes the payload, half-closes and reads the echo.
local clients = dispatch.queue{label = "echo.clients", concurrent = true}
local tally = dispatch.queue("echo.tally")
local group = dispatch.group()
local received, started = 0, dispatch.now()
for _ = 1, conns do
  group:enter()
  net.connect({port = port}, clients, function(fd, err)
    assert(fd, err)
    local got = 0
    local ch = dispatch.io{fd = fd, queue = clients, cleanup = function() dispatch.fd.close(fd) end}
    ch:write(0, payload, clients, function(done) if done then net.shutdown(fd, "write") end end)
    ch:read(0, math.huge, clients, function(done, data, rerr)
      got = got + #data
      if done then
        assert(rerr == 0 and got == size, "short echo")
        ch:close()
        tally:async(function() received = received + got; group:leave() end)
      end
    end)
  end)
end
group:notify(tally, function()
  local seconds = dispatch.now() - started
  assert(received == conns * size)
  listener:cancel(); dispatch.fd.close(lfd)
  print(string.format("%.1f %.4f", conns * size * 2 / seconds / 1e6, seconds))
end)
