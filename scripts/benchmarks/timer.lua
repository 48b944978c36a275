-- A 10 ms repeating timer for 1 s: prints the mean and max lateness of its handler runs, in
-- microseconds, against the ideal schedule start + n * 10 ms.
-- usage: luadispatch run timer.lua [interval_seconds [duration_seconds]]
local dispatch = require("dispatch")
local args = {...}
local interval = tonumber(args[1] or "") or 0.01
local duration = tonumber(args[2] or "") or 1.0
local fires = math.floor(duration / interval + 0.5)

local q = dispatch.queue("timer")
local start = dispatch.now() + interval
local n, sum, max = 0, 0, 0
local timer = dispatch.source.timer{deadline = start, interval = interval, leeway = 0, queue = q}
timer:set_event_handler(function()
  n = n + timer.data                      -- fires since the last run (coalesced when late)
  local late = (dispatch.now() - (start + (n - 1) * interval)) * 1e6
  sum = sum + late
  if late > max then max = late end
  if n >= fires then timer:cancel() end
end)
timer:set_cancel_handler(function()
  print(("timer %.0f ms x %d: mean lateness %.1f us, max %.1f us"):format(interval * 1e3, n, sum / n, max))
end)
timer:resume()
