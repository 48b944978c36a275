-- The Redis server of scripts/examples/redis-server.lua on luv (libuv) under stock lua5.4,
-- sharing its protocol code (scripts/examples/reqresp.lua): the baseline of the net_redis rows.
--   lua5.4 scripts/benchmarks/redis-luv.lua [PORT]    (prints the port, then serves)
local uv = require("luv")
local dir = (arg[0]:match("^(.*/)") or "./") .. "../examples/"
local proto = dofile(dir .. "reqresp.lua")

local store = {}
-- libuv writes with write(2): a client that resets would end the process with SIGPIPE.
uv.new_signal():start("sigpipe", function() end)

local server = uv.new_tcp()
assert(server:bind("127.0.0.1", tonumber(arg[1]) or 0))
assert(server:listen(1024, function(err)
  if err then return end
  local c = uv.new_tcp()
  if not server:accept(c) then return c:close() end
  c:nodelay(true)
  local feed = proto.resp(store)
  c:read_start(function(rerr, data)
    if rerr or not data then return c:close() end
    local ok, replies, quit = pcall(feed, data)
    if not ok then
      c:write("-ERR " .. tostring(replies) .. "\r\n")
      return c:close()
    end
    if replies then c:write(replies) end
    if quit then c:close() end
  end)
end))
print(server:getsockname().port)
io.stdout:flush()
uv.run()
