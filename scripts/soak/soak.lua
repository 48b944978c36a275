-- Soak: one process creates, fires and cancels sources of every kind and pipe channels, round
-- after round, with descriptors closed right after cancel (their numbers reused at once).
-- Every event and every cancel handler is counted; any loss, double run or hang fails.
--   luadispatch run scripts/soak/soak.lua [ROUNDS] [DIR]
local dispatch = require("dispatch")
local rounds = tonumber(arg[1] or 1000)
local dir = arg[2] or os.getenv("TMPDIR") or "/tmp"
local q = dispatch.queue("soak")
local c = {created = 0, cancelled = 0, events = 0, lost = 0, eof = 0, exits = 0, channels = 0, bytes = 0}
local failures = {}

local function fail(what) failures[#failures + 1] = what; c.lost = c.lost + 1 end

-- Runs one source until its handler cancels it; `fire` makes the event happen after resume.
local function one(kind, opts, fire, onEvent)
  local done, cancelled = dispatch.semaphore(0), dispatch.semaphore(0)
  local s
  opts.queue = q
  opts.handler = function()
    if onEvent(s) then c.events = c.events + 1; s:cancel(); done:signal() end
  end
  opts.cancel_handler = function() c.cancelled = c.cancelled + 1; cancelled:signal() end
  s = assert(dispatch.source[kind](opts))
  c.created = c.created + 1
  s:resume()
  if fire then fire(s) end
  if not done:wait(5) then fail(kind .. " event"); s:cancel() end
  if not cancelled:wait(5) then fail(kind .. " cancel handler") end
  return s
end

local file = dir .. "/soak-" .. dispatch.pid() .. ".txt"
for round = 1, rounds do
  one("timer", {deadline = 0}, nil, function() return true end)
  one("data_add", {}, function(s) s:merge(3) end, function(s) return s.data == 3 end)
  one("signal", {signal = "SIGUSR2"}, function() dispatch.kill(dispatch.pid(), "SIGUSR2") end,
    function() return true end)

  -- read until end of file; the descriptor is closed right after cancel
  local r, w = dispatch.fd.pipe()
  one("read", {fd = r}, function()
    dispatch.fd.write(w, "soak " .. round)
    dispatch.fd.close(w)
  end, function()
    local d = dispatch.fd.read(r, 4096)
    if d == "" then c.eof = c.eof + 1; return true end
    c.bytes = c.bytes + #d
  end)
  dispatch.fd.close(r)

  -- writable at once; both ends closed right after cancel
  local r2, w2 = dispatch.fd.pipe()
  one("write", {fd = w2}, nil, function(s) return s.data > 0 end)
  dispatch.fd.close(r2); dispatch.fd.close(w2)

  -- a file written to
  local f = assert(io.open(file, "w")); f:close()
  one("file", {path = file, events = {"write"}}, function()
    local g = assert(io.open(file, "a")); g:write("x"); g:close()
  end, function() return true end)

  -- a short-lived child every 10 rounds (the shell's pid is the child that exits)
  if round % 10 == 0 then
    local p = assert(io.popen("echo $$; exec sleep 0.01"))
    local pid = tonumber(p:read("l"))
    one("process", {pid = pid}, nil, function(s) c.exits = c.exits + 1; return true end)
    p:close()
  end

  -- a pipe channel read to the end, closed early
  local cr, cw = dispatch.fd.pipe()
  local ch = dispatch.io{fd = cr, queue = q}
  local got = dispatch.semaphore(0)
  ch:read(0, 64, q, function(finished, data, err)
    if data then c.bytes = c.bytes + #data end
    if finished then got:signal() end
  end)
  dispatch.fd.write(cw, "channel"); dispatch.fd.close(cw)
  if got:wait(5) then c.channels = c.channels + 1 else fail("channel read") end
  ch:close(); dispatch.fd.close(cr)

  if round % 100 == 0 then collectgarbage() end
end
os.remove(file)

local expected_sources = rounds * 6 + rounds // 10
local ok = #failures == 0 and c.created == expected_sources and c.cancelled == expected_sources
  and c.events == expected_sources and c.eof == rounds and c.channels == rounds and c.exits == rounds // 10
print(string.format("soak: %d rounds, %d sources created, %d cancel handlers, %d events, %d EOFs, %d exits, %d channels, %d lost",
  rounds, c.created, c.cancelled, c.events, c.eof, c.exits, c.channels, c.lost))
for _, f in ipairs(failures) do print("lost: " .. f) end
if not ok then print("soak: FAILED"); os.exit(1) end
print("soak: ok")
