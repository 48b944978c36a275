-- title: Timer source every 2 seconds
-- seed: 004 (22.10.4 Dispatch sources: timers)
-- expect: 5 checks, 12 s of delays
--
-- The chapter's timer (its listing is a picture): a DISPATCH_SOURCE_TYPE_TIMER
-- source on a global queue, dispatch_source_set_timer(timer, start, 2 s
-- interval, leeway), a handler that prints "timer", dispatch_resume. It
-- repeats until the program exits or dispatch_source_cancel is called;
-- dispatch_source_get_data gives the number of fires since the handler last
-- ran. A one-shot timer is one whose handler cancels it.
--
-- Here the interval is scenario.delay(2) (2 s unless the run is scaled), and
-- the repeating timer is cancelled after five fires.
--
-- The timer's handler runs on a serial queue whose target is the default global
-- queue (so on the global queue's threads), shared with the one-shot timer below:
-- libdispatch fires timers of one clock in deadline order, and two handlers queued
-- on one serial queue run in that order, so "the first fire comes before the
-- one-shot due at half an interval" holds however late a loaded machine runs the
-- handlers (on two different queues it was a race between two threads).

local dispatch = require("dispatch")
local scenario = require("scenario")

local INTERVAL = scenario.delay(2)
local FIRES = 5

local timers = dispatch.queue{label = "timers", target = dispatch.global("default")}
local start = dispatch.now()
local handlerRuns, fires, fireTimes = 0, 0, {}
local cancelledAt, firesAtCancel
local oneShotAt                   -- when the one-shot timer below fired
local timer

timer = dispatch.source.timer{
  deadline = 0,                   -- DISPATCH_TIME_NOW: first fire at once
  interval = INTERVAL,
  leeway = INTERVAL / 100,
  queue = timers,
  handler = function()
    handlerRuns = handlerRuns + 1
    fires = fires + timer.data
    fireTimes[#fireTimes + 1] = dispatch.now() - start
    print(string.format("timer (at %.3f s, %d fire(s) since the last run) on %s",
      fireTimes[#fireTimes], timer.data, tostring(dispatch.thread())))
    if fires >= FIRES and not cancelledAt then
      cancelledAt = dispatch.now()
      firesAtCancel = fires
      timer:cancel()
    end
  end,
  cancel_handler = function()
    print("timer cancelled")
    -- Wait two more intervals: a cancelled timer never fires again.
    dispatch.main:after(2 * INTERVAL, function()
      print(string.format("%.3f s after the cancel: %d fires in total", dispatch.now() - cancelledAt, fires))
      scenario.check(firesAtCancel >= FIRES, "the timer fired repeatedly (" .. FIRES .. " times)")
      scenario.check(fires == firesAtCancel, "no fire after the cancel")
      -- Fire k is due at (k - 1) * INTERVAL after the start; timers never fire early.
      local last = fireTimes[#fireTimes]
      scenario.check(last >= (fires - 1) * INTERVAL - 0.005,
        string.format("the fires are spaced by the interval (fire %d at %.3f s)", fires, last))
      scenario.check(oneShotAt ~= nil and fireTimes[1] < oneShotAt,
        "the first fire comes at the start time (now), before the one-shot timer due at half an interval")
    end)
  end,
}
timer:resume()

-- A one-shot timer: no interval, and the handler cancels it.
local oneShot
local oneShotRuns = 0
oneShot = dispatch.source.timer{
  deadline = INTERVAL / 2,
  queue = timers,
  handler = function()
    oneShotRuns = oneShotRuns + 1
    oneShotAt = dispatch.now() - start
    print(string.format("one-shot timer at %.3f s; cancelling itself", dispatch.now() - start))
    oneShot:cancel()
  end,
  cancel_handler = function()
    dispatch.main:after(INTERVAL, function()
      scenario.check(oneShotRuns == 1, "the one-shot timer fired exactly once")
    end)
  end,
}
oneShot:resume()
