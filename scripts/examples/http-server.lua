-- A keep-alive HTTP/1.1 server on dispatch.net answering every request with a short text.
--   luadispatch scripts/examples/http-server.lua [PORT]     (prints the port, then serves)
--   wrk -t1 -c64 -d5s http://127.0.0.1:PORT/
local dispatch = require("dispatch")
local dir = (arg and arg[0] or ""):match("^(.*/)") or "./"
local proto = dofile(dir .. "reqresp.lua")

local server = assert(dispatch.net.serve({port = tonumber(arg and arg[1]) or 0, backlog = 1024}, function(conn)
  local feed = proto.http()
  conn:on_data(function(data)
    if not data then return conn:close() end
    local replies, close = feed(data)
    if replies then conn:write(replies) end
    if close then conn:close() end
  end)
end))
print(server.port)
io.stdout:flush()
