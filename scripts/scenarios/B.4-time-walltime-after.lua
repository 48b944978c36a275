-- title: dispatch_time, dispatch_walltime and dispatch_after
-- seed: 004 (22.8 Time, Time, Time)
-- expect: 16 checks, 4 s of delays
--
-- The chapter's milestones:
--
--   dispatch_time_t milestone = dispatch_time(DISPATCH_TIME_NOW, 23ull * NSEC_PER_SEC);
--
--   struct tm tm = {0,};
--   strptime("2016-09-13 13:13", "%Y-%m-%d %H:%M", &tm);   // the book misprints %H:%H
--   struct timespec ts = {};
--   ts.tv_sec = mktime(&tm);
--   dispatch_time_t time_out = dispatch_walltime(&ts, 0);
--
--   void dispatch_after(dispatch_time_t when, dispatch_queue_t queue, void (^block)(void));
--
-- Host-clock times are dispatch.now() + seconds; wall-clock times are
-- dispatch.walltime(...) (UTC here, where the book's mktime uses local time).
-- A timeout is a deadline given to a wait. dispatch_after with
-- DISPATCH_TIME_NOW is like dispatch_async, and so is a deadline in the past.

local dispatch = require("dispatch")
local scenario = require("scenario")

local EARLY = 0.005          -- tolerance for clock granularity

-- 1. A milestone 23 seconds from now (scaled), on the host clock.
local now = dispatch.now()
local milestone = now + scenario.delay(23)
print(string.format("milestone = now + %.3f s; milestone - now = %.3f s; milestone > now: %s",
  scenario.delay(23), milestone - now, tostring(milestone > now)))
scenario.check(math.abs((milestone - now) - scenario.delay(23)) < 1e-6, "now + 23 s is 23 s after now")
scenario.check(milestone > now and now < milestone, "later milestones compare greater")

-- 2. A fixed point in wall-clock time, 2016-09-13 13:13:00 UTC.
local time_out = dispatch.walltime("2016-09-13 13:13:00")
local fromTable = dispatch.walltime{ year = 2016, month = 9, day = 13, hour = 13, min = 13 }
local fromUnix = dispatch.walltime(1473772380)     -- date -u -d "2016-09-13 13:13:00" +%s
local wallNow = dispatch.walltime()
print(string.format("walltime 2016-09-13 13:13:00 is %.0f s before now", wallNow - time_out))
scenario.check(time_out == fromTable and time_out == fromUnix, "the string, table and Unix-seconds forms give the same wall time")
scenario.check(time_out < wallNow, "2016 is in the past")
scenario.check(math.abs(((time_out + 60) - time_out) - 60) < 1e-6, "wall time + 60 s is 60 s later")

-- 3. A wait with a timeout: nothing signals, so it times out at the deadline.
local sema = dispatch.semaphore(0)
local t0 = dispatch.now()
local ok, why = sema:wait(dispatch.now() + scenario.delay(0.5))
local waited = dispatch.now() - t0
print(string.format("semaphore wait with a %.3f s host-clock timeout: %s, %s after %.3f s",
  scenario.delay(0.5), tostring(ok), tostring(why), waited))
scenario.check(ok == false and why == "timeout", "a wait with a timeout returns false, \"timeout\"")
scenario.check(waited >= scenario.delay(0.5) - EARLY, "the wait lasted until its timeout")
t0 = dispatch.now()
ok, why = sema:wait(dispatch.walltime() + scenario.delay(0.5))
waited = dispatch.now() - t0
print(string.format("semaphore wait with a %.3f s wall-clock timeout: %s, %s after %.3f s",
  scenario.delay(0.5), tostring(ok), tostring(why), waited))
scenario.check(ok == false and waited >= scenario.delay(0.5) - EARLY, "a wall-clock timeout works the same way")

-- 4. dispatch_after with each kind of time.
--
-- The order checked below must be the order of the deadlines themselves, whenever this
-- thread runs: it may be descheduled for longer than a (scaled) second between two calls
-- on a loaded machine. So the deadlines in the past go first (they are submitted at once,
-- before any timer exists), the relative one next, and the host- and wall-clock ones are
-- computed after it from one reading of both clocks: each deadline is then at least one
-- (scaled) second after the one before it, however late each call is made.
local start = dispatch.now()
local fired = {}
local group = dispatch.group()
local function after(name, when, expected)
  group:enter()
  dispatch.main:after(when, function()
    local at = dispatch.now() - start
    fired[#fired + 1] = name
    print(string.format("%-28s fired after %.3f s (asked for %.3f s)", name, at, expected))
    -- No earlier than asked; how much later a loaded machine decides (the order is checked below).
    scenario.check(at >= expected - EARLY, name .. " fires no earlier than its deadline")
    group:leave()
  end)
end
after("wall clock, 2016 (the past)", time_out, 0)
after("DISPATCH_TIME_NOW", dispatch.now(), 0)
after("relative number, 1 s", scenario.delay(1), dispatch.now() - start + scenario.delay(1))
local base, wallBase = dispatch.now(), dispatch.walltime()   -- the wall reading is the later one
after("host clock, now + 2 s", base + scenario.delay(2), base - start + scenario.delay(2))
after("wall clock, now + 3 s", wallBase + scenario.delay(3), base - start + scenario.delay(3))

group:notify(dispatch.main, function()
  print("order: " .. table.concat(fired, ", "))
  local pos = {}
  for i, name in ipairs(fired) do pos[name] = i end
  scenario.check(#fired == 5, "every dispatch_after fired")
  scenario.check(pos["DISPATCH_TIME_NOW"] < pos["relative number, 1 s"]
    and pos["wall clock, 2016 (the past)"] < pos["relative number, 1 s"],
    "deadlines now or in the past fire at once, before the later ones")
  scenario.check(pos["relative number, 1 s"] < pos["host clock, now + 2 s"]
    and pos["host clock, now + 2 s"] < pos["wall clock, now + 3 s"],
    "the 1 s, 2 s and 3 s deadlines fire in order")
end)
