-- The `net_accept` row's baseline: accept.lua with luv (libuv) under stock lua5.4.
-- usage: lua5.4 accept-luv.lua TOTAL CHAINS   prints "CONNECTIONS/s SECONDS"
local uv = require("luv")
local total, chains = tonumber(arg[1]) or 20000, tonumber(arg[2]) or 16

local server = uv.new_tcp()
assert(server:bind("127.0.0.1", 0))
local port = server:getsockname().port
local accepted = 0
assert(server:listen(1024, function(err)
  assert(not err, err)
  local c = uv.new_tcp()
  server:accept(c)
  accepted = accepted + 1
  c:close()
  if accepted == total then server:close() end
end))

local started = uv.hrtime()
local function chain(left)
  if left == 0 then return end
  local c = uv.new_tcp()
  c:connect("127.0.0.1", port, function(err)
    assert(not err, err)
    c:close()
    chain(left - 1)
  end)
end
for i = 1, chains do chain(total // chains + (i <= total % chains and 1 or 0)) end
uv.run()
local seconds = (uv.hrtime() - started) / 1e9
assert(accepted == total)
print(string.format("%.0f %.4f", total / seconds, seconds))
