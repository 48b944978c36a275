-- Combine two files into one with DispatchIO stream channels (highWater 1 MiB): every chunk
-- is written to the output channel as soon as it is read, as dispatch.data (never a Lua string).
-- usage: luadispatch run combine.lua A B OUT
local dispatch = require("dispatch")
local a, b, out = ...
assert(a and b and out, "usage: combine.lua A B OUT")

local q = dispatch.queue("combine")
local started = dispatch.now()
local failed = false
local function check(what, err)
  if err ~= 0 and not failed then
    failed = true
    io.stderr:write(("combine: %s: %s\n"):format(what, dispatch.errno_name(err)))
  end
end

local output = dispatch.io{path = out, mode = "w", queue = q, cleanup = function(err)
  check(out, err)
  print(("combined %s + %s -> %s in %.3f s"):format(a, b, out, dispatch.now() - started))
  if failed then dispatch.exit(1) end
end}

local function copy(path, after)
  local input = dispatch.io{path = path, mode = "r", queue = q, cleanup = function(err) check(path, err) end}
  input:set_limit{high = 1024 * 1024}
  input:read(0, math.huge, q, function(done, data, err)
    if #data > 0 then
      output:write(0, data, q, function(_, _, werr) check(out, werr) end)
    end
    if done then
      check(path, err)
      input:close()
      after()
    end
  end)
end

copy(a, function()
  copy(b, function() output:close() end)
end)
