-- A block on a background queue asks a server for a reply over a luasocket connection; the
-- server's handlers, on the main queue, send the reply a little later. luasocket blocks while
-- it holds the interpreter, so a block waiting in `client:receive()` would keep the main queue
-- from ever sending the reply. The GCD way: a read source on the socket's descriptor
-- (`client:getfd()`), whose handler runs only once data is there, so `receive` returns at once.
--
--   luadispatch scripts/examples/luasocket.lua          the read source: prints the reply
--   luadispatch scripts/examples/luasocket.lua blocking  receive() waiting: gives up after 2 s
--
-- (Debian: apt-get install lua-socket.) See docs/execution-model.md, "Blocking calls".
local dispatch = require("dispatch")
local socket = require("socket")
local blocking = arg[1] == "blocking"

-- The server: everything on the main queue, driven by read sources.
local server = assert(socket.bind("127.0.0.1", 0))
server:settimeout(0)
local _, port = server:getsockname()
local acceptor
acceptor = dispatch.source.read{fd = server:getfd(), queue = dispatch.main, handler = function()
  local conn = server:accept()
  if not conn then return end
  conn:settimeout(0)
  acceptor:cancel()
  local requests
  requests = dispatch.source.read{fd = conn:getfd(), queue = dispatch.main, handler = function()
    local line = conn:receive("*l")
    if not line then return end
    requests:cancel()
    dispatch.main:after(0.2, function()          -- the reply comes from a main-queue handler
      conn:send("pong for " .. line .. "\n")
      conn:close()
      server:close()
    end)
  end}
  requests:resume()
end}
acceptor:resume()

-- Meanwhile the main queue ticks.
local ticks = 0
local ticker = dispatch.source.timer{interval = 0.02, queue = dispatch.main,
                                     handler = function() ticks = ticks + 1 end}
ticker:resume()

-- The client: a block on a queue of its own.
local q = dispatch.queue("client")
q:async(function()
  local client = assert(socket.connect("127.0.0.1", port))
  client:send("ping\n")
  if blocking then
    client:settimeout(2)                        -- luasocket waits, holding the interpreter
    local line, err = client:receive("*l")
    print("receive:", line or err)
    client:close()
    ticker:cancel()
    dispatch.main:async(function() if acceptor then acceptor:cancel() end end)
    return
  end
  client:settimeout(0)                          -- luasocket never waits
  local pending = ""
  local reader
  reader = dispatch.source.read{fd = client:getfd(), queue = q, handler = function()
    local line, err, partial = client:receive("*l", pending)
    if line then
      print("reply:", line)
    elseif err == "timeout" then
      pending = partial                         -- part of a line: wait for the rest
      return
    else
      print("connection:", err)
    end
    reader:cancel()
    client:close()
    dispatch.main:async(function()
      ticker:cancel()
      print("the main queue ticked meanwhile: " .. tostring(ticks >= 5))
    end)
  end}
  reader:resume()
end)
