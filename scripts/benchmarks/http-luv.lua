-- The keep-alive HTTP server of scripts/examples/http-server.lua on luv (libuv) under stock
-- lua5.4, sharing its protocol code: the baseline of the net_http rows.
--   lua5.4 scripts/benchmarks/http-luv.lua [PORT]     (prints the port, then serves)
local uv = require("luv")
local dir = (arg[0]:match("^(.*/)") or "./") .. "../examples/"
local proto = dofile(dir .. "reqresp.lua")

-- libuv writes with write(2): a client that resets would end the process with SIGPIPE.
uv.new_signal():start("sigpipe", function() end)

local server = uv.new_tcp()
assert(server:bind("127.0.0.1", tonumber(arg[1]) or 0))
assert(server:listen(1024, function(err)
  if err then return end
  local c = uv.new_tcp()
  if not server:accept(c) then return c:close() end
  c:nodelay(true)
  local feed = proto.http()
  c:read_start(function(rerr, data)
    if rerr or not data then return c:close() end
    local replies, close = feed(data)
    if replies then c:write(replies) end
    if close then c:close() end
  end)
end))
print(server:getsockname().port)
io.stdout:flush()
uv.run()
