-- Connections made, accepted and closed through dispatch.net: the Lua side of the `net_accept` row.
-- CHAINS clients at a time, each connecting, closing and connecting again, TOTAL connections in
-- all; the server accepts from a read source on the listening socket and closes each at once.
-- usage: luadispatch run accept.lua TOTAL CHAINS   prints "CONNECTIONS/s SECONDS"
local dispatch = require("dispatch")
local net = dispatch.net
local total, chains = tonumber(arg[1]) or 20000, tonumber(arg[2]) or 16

local lfd, port = assert(net.listen{backlog = 1024})
local server = dispatch.queue("accept.server")
local accepted = 0
local listener = dispatch.source.read{fd = lfd, queue = server}
listener:set_event_handler(function()
  while true do
    local c = net.accept(lfd)
    if not c then return end
    accepted = accepted + 1
    dispatch.fd.close(c)
  end
end)
listener:resume()

local clients = dispatch.queue{label = "accept.clients", concurrent = true}
local group = dispatch.group()
local started = dispatch.now()
local function chain(left)
  if left == 0 then return group:leave() end
  net.connect({port = port}, clients, function(fd, err)
    assert(fd, err)
    dispatch.fd.close(fd)
    chain(left - 1)
  end)
end
for i = 1, chains do
  group:enter()
  chain(total // chains + (i <= total % chains and 1 or 0))
end
group:notify(server, function()
  local function finish()   -- the last connections may still wait in the backlog
    if accepted < total then return server:after(0.001, finish) end
    local seconds = dispatch.now() - started
    listener:cancel(); dispatch.fd.close(lfd)
    print(string.format("%.0f %.4f", total / seconds, seconds))
  end
  finish()
end)
