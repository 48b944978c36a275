-- title: Echo server: a read source on the listening socket, a channel per connection
-- seed: the GCD server pattern (docs/net.md), with clients on a concurrent queue
-- expect: 5 checks, 0.05 s of delays
--
-- GCD has no server object: a server is a read source on a listening socket, whose handler
-- accepts every waiting connection, and a DispatchIO channel per connection. Here each
-- connection's channel reads whatever arrives and writes it straight back (the chunks stay
-- dispatch.data: no Lua string is made), and once the client has half-closed (end of file)
-- the server half-closes in turn after its last write (a channel barrier) and closes the
-- channel; the channel's cleanup closes the socket.
--
-- Eight clients run at once on a concurrent queue: each connects (a non-blocking connect whose
-- handler runs on the clients' queue), sends its first half, pauses, sends the second half,
-- half-closes and reads the echo to end of file (the pause is an `after`, not a sleep: a
-- sleeping client would hold one of the few worker threads the server's handlers need too).
-- The server's bookkeeping (connections open, the most at once) lives on its serial accept
-- queue; the clients' results go through a serial queue too, and a group notifies the main
-- queue when every client is done.
local dispatch = require("dispatch")
local scenario = require("scenario")
local net = dispatch.net

local CLIENTS = 8

-- The server.
local lfd, port = assert(net.listen{host = "127.0.0.1", port = 0})
print(("listening on 127.0.0.1:%d (fd %d)"):format(port, lfd))
local acceptQueue = dispatch.queue("echo.accept")          -- the server's bookkeeping
local serverQueue = dispatch.queue{label = "echo.server", concurrent = true}
local accepted, open, mostOpen, serverEOFs = 0, 0, 0, 0

local listener = dispatch.source.read{fd = lfd, queue = acceptQueue}
listener:set_event_handler(function()
  while true do                                            -- every connection waiting now
    local conn, peer = net.accept(lfd)
    if not conn then return end
    accepted, open = accepted + 1, open + 1
    mostOpen = math.max(mostOpen, open)
    print(("server: accepted %s (%d open)"):format(peer, open))
    local channel = dispatch.io{fd = conn, queue = serverQueue, cleanup = function()
      dispatch.fd.close(conn)
      acceptQueue:async(function() open = open - 1 end)
    end}
    channel:read(0, math.huge, serverQueue, function(done, data, err)
      if #data > 0 then channel:write(0, data, serverQueue, function() end) end
      if done then                                         -- the client half-closed
        if err == 0 then acceptQueue:async(function() serverEOFs = serverEOFs + 1 end) end
        channel:barrier(function() net.shutdown(conn, "write") end)
        channel:close()
      end
    end)
  end
end)
listener:resume()

-- The clients.
local clientQueue = dispatch.queue{label = "echo.clients", concurrent = true}
local results = dispatch.queue("echo.results")
local echoed, clientEOFs = {}, 0
local group = dispatch.group()

local function message(i)
  local lines = {}
  for n = 1, 200 do lines[n] = ("client %d line %03d: the quick brown fox\n"):format(i, n) end
  return table.concat(lines)
end

for i = 1, CLIENTS do
  group:enter()
  net.connect({host = "127.0.0.1", port = port}, clientQueue, function(fd, err)
    if not fd then
      print("client " .. i .. ": " .. err)
      return group:leave()
    end
    local text = message(i)
    local half = #text // 2
    local got = dispatch.data()
    local channel = dispatch.io{fd = fd, queue = clientQueue, cleanup = function() dispatch.fd.close(fd) end}
    channel:read(0, math.huge, clientQueue, function(done, data, rerr)
      got = got .. data
      if done then
        channel:close()
        results:async(function()
          echoed[i] = got:bytes() == text
          if rerr == 0 then clientEOFs = clientEOFs + 1 end
          print(("client %d: %d bytes echoed back, %s"):format(i, #got, echoed[i] and "identical" or "DIFFERENT"))
          group:leave()
        end)
      end
    end)
    channel:write(0, text:sub(1, half), clientQueue, function() end)
    clientQueue:after(scenario.delay(0.05), function()      -- the other clients connect meanwhile
      channel:write(0, text:sub(half + 1), clientQueue, function(done)
        if done then net.shutdown(fd, "write") end         -- half-close after the last byte
      end)
    end)
  end)
end

group:notify(dispatch.main, function()
  listener:cancel()
  dispatch.fd.close(lfd)
  local all = true
  for i = 1, CLIENTS do all = all and echoed[i] == true end
  scenario.check(all, "every client got its bytes back, byte for byte")
  scenario.check(clientEOFs == CLIENTS, "every client read its echo to end of file")
  acceptQueue:sync(function()
    print(("server: %d connections, at most %d open at once"):format(accepted, mostOpen))
    scenario.check(accepted == CLIENTS and serverEOFs == CLIENTS,
      "the server accepted every client and read each one's half-close as end of file")
    scenario.check(mostOpen > 1, "the server served several connections at once")
  end)
  scenario.check(dispatch.thread().is_main, "the notification runs on the main thread")
end)
