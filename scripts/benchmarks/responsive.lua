-- Responsiveness: a 10 ms repeating timer on the main queue for DURATION seconds, alone ("idle")
-- or while a block on a global queue computes in pure Lua for the same time ("busy"). Prints the
-- median lateness of the timer's handler runs (microseconds, against start + n * interval) and
-- the longest gap between two runs (milliseconds).
-- usage: luadispatch run responsive.lua idle|busy [duration_seconds [interval_seconds]]
local dispatch = require("dispatch")
local args = {...}
local mode = args[1] or "busy"
local duration = tonumber(args[2] or "") or 2.0
local interval = tonumber(args[3] or "") or 0.01

local start = dispatch.now() + interval
local late, n, last, gap = {}, 0, start, 0
local timer = dispatch.source.timer{deadline = start, interval = interval, leeway = 0, queue = dispatch.main}
timer:set_event_handler(function()
  local now = dispatch.now()
  n = n + timer.data
  late[#late + 1] = (now - (start + (n - 1) * interval)) * 1e6
  if now - last > gap then gap = now - last end
  last = now
  if now - start >= duration then
    timer:cancel()
    table.sort(late)
    print(("%.1f us median lateness, %.2f ms longest gap, %d runs"):format(late[(#late + 1) // 2], gap * 1e3, #late))
  end
end)
timer:resume()

if mode == "busy" then
  dispatch.global():async(function()
    local deadline, x = dispatch.now() + duration + 0.05, 0
    while dispatch.now() < deadline do
      for i = 1, 10000 do x = x + i % 7 end
    end
  end)
end
