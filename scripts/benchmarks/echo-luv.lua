-- Loopback echo with luv (libuv) under stock lua5.4: the baseline of the `net_echo` row.
-- usage: lua5.4 echo-luv.lua CONNECTIONS BYTES   prints "MB/s SECONDS"
local uv = require("luv")
local conns, size = tonumber(arg[1] or 20), tonumber(arg[2] or 4194304)
local payload = string.rep("0123456789abcdef", size // 16)
assert(#payload == size)

local server = uv.new_tcp()
assert(server:bind("127.0.0.1", 0))
local port = server:getsockname().port
assert(server:listen(1024, function(err)
  assert(not err, err)
  local c = uv.new_tcp()
  server:accept(c)
  c:read_start(function(rerr, chunk)
    assert(not rerr, rerr)
    if chunk then c:write(chunk)
    else c:shutdown(function() c:close() end) end
  end)
end))

local started = uv.hrtime()
local finished, received = 0, 0
for _ = 1, conns do
  local c = uv.new_tcp()
  c:connect("127.0.0.1", port, function(err)
    assert(not err, err)
    c:write(payload)
    c:shutdown()
    local got = 0
    c:read_start(function(rerr, chunk)
      assert(not rerr, rerr)
      if chunk then got = got + #chunk return end
      assert(got == size, "short echo")
      received = received + got
      c:close()
      finished = finished + 1
      if finished == conns then server:close() end
    end)
  end)
end
uv.run()
local seconds = (uv.hrtime() - started) / 1e9
assert(received == conns * size)
print(string.format("%.1f %.4f", conns * size * 2 / seconds / 1e6, seconds))
