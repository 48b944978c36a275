-- A small Redis server on dispatch.net (PING, SET, GET, INCR, and enough of CONFIG and COMMAND
-- for redis-benchmark): the request/response shape of docs/net.md.
--   luadispatch scripts/examples/redis-server.lua [PORT]    (prints the port, then serves)
--   redis-benchmark -p PORT -c 50 -n 100000 -t ping,set,get,incr
local dispatch = require("dispatch")
local dir = (arg and arg[0] or ""):match("^(.*/)") or "./"
local proto = dofile(dir .. "reqresp.lua")

local store = {}
local server = assert(dispatch.net.serve({port = tonumber(arg and arg[1]) or 0, backlog = 1024}, function(conn)
  local feed = proto.resp(store)
  conn:on_data(function(data)
    if not data then return conn:close() end  -- end of stream, or an error (reset)
    local ok, replies, quit = pcall(feed, data)
    if not ok then
      conn:write("-ERR " .. tostring(replies) .. "\r\n")
      return conn:close()
    end
    if replies then conn:write(replies) end
    if quit then conn:close() end
  end)
end))
print(server.port)
io.stdout:flush()
