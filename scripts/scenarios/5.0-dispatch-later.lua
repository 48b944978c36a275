-- title: dispatch_later: a task added to the main queue after 2 s
-- seed: 000 §5 (delayed enqueue with asyncAfter: AsyncAfter.dispatch_later)
-- expect: 2 checks, 2 s of delays
--
-- asyncAfter adds the task to the queue once the deadline has passed (the delay is the
-- time it is *enqueued*, not the time it starts).
local dispatch = require("dispatch")
local scenario = require("scenario")

local t0 = dispatch.now()
local function date()   -- Date(), with the elapsed time since the start
    return string.format("%s (+%.2f s)", os.date("!%Y-%m-%d %H:%M:%S +0000"), dispatch.now() - t0)
end

local AsyncAfter = {}

--- run a closure after a delay
function AsyncAfter.dispatch_later(time, block)
    local t = dispatch.now() + time
    dispatch.main:after(t, block)
end

print("now: " .. date())
AsyncAfter.dispatch_later(scenario.delay(2), function()
    print("Make a phone call at: " .. date())   -- runs 2 seconds later
    local elapsed = dispatch.now() - t0
    -- The deadline is 2 s after a moment later than t0: a timer never fires early.
    scenario.check(elapsed >= scenario.delay(2), "the task fires after >= 2 s")
    scenario.check(dispatch.thread().is_main, "the task runs on the main queue (main thread)")
end)
