-- title: DispatchTime and DispatchWallTime
-- seed: 000 appendix (time structures: DispatchTime, DispatchWallTime, timespec, getWallTime(from:))
-- expect: 13 checks, 0.5 s of delays
--
-- DispatchTime is a point on a monotonic clock (since boot, paused while the system
-- sleeps); `now() + 2.1` is 2.1 s later. DispatchWallTime is an absolute wall-clock time
-- stamp. The appendix builds one from a timespec and one from the string
-- "2018-03-08 13:30:00" (UTC). In Lua, dispatch.walltime() takes Unix seconds (a timespec's
-- tv_sec + tv_nsec / 1e9), the string itself, or a date table; differences are seconds.
local dispatch = require("dispatch")
local scenario = require("scenario")

local function near(a, b, eps) return math.abs(a - b) <= (eps or 1e-6) end

--- seconds since 1970-01-01 00:00:00 UTC of a wall time
local epoch = dispatch.walltime(0)
local function unixSeconds(wt) return wt - epoch end
local function show(wt)
    local s = unixSeconds(wt)
    return string.format("%s UTC (+%.9f s, Unix %.6f)", os.date("!%Y-%m-%d %H:%M:%S", math.floor(s)),
        s - math.floor(s), s)
end

print("DispatchTime")
local now = dispatch.now()                 -- DispatchTime.now()
local twoSecondAfter = now + 2.1           -- 2.1 s after now
print(string.format("twoSecondAfter - now = %.6f s", twoSecondAfter - now))
print("twoSecondAfter > now: " .. tostring(twoSecondAfter > now))
print("now + 2.1 - 2.1 == now: " .. tostring(twoSecondAfter - 2.1 == now))
local later = dispatch.now()
print(string.format("a second DispatchTime.now() is %.6f s later (monotonic: %s)", later - now, tostring(later >= now)))
scenario.check(near(twoSecondAfter - now, 2.1), "DispatchTime: (now + 2.1) - now == 2.1")
scenario.check(twoSecondAfter > now and now < twoSecondAfter, "DispatchTime: now + 2.1 compares greater")
scenario.check(later >= now, "DispatchTime is monotonic")

print("\nDispatchWallTime")
local wallTime = dispatch.walltime() + 2.0   -- 2 s from now
print("DispatchWallTime.now() + 2.0: " .. show(wallTime))
local osNow = os.time()
scenario.check(math.abs(unixSeconds(wallTime) - 2.0 - osNow) < 2, "DispatchWallTime.now() is the current wall-clock time")

-- timespec(tv_sec: 86400, tv_nsec: 10): 1970-01-02, 10 ns
local fromTimespec = dispatch.walltime(86400 + 10 / 1e9)
print("timespec(tv_sec: 86400, tv_nsec: 10): " .. show(fromTimespec))
scenario.check(near(unixSeconds(fromTimespec), 86400, 1e-6), "timespec 86400 s is 1970-01-02 00:00:00 UTC")

-- gettimeofday -> timeval -> timespec -> DispatchWallTime: the current time
local tv = os.time()
local fromTimeval = dispatch.walltime(tv)
print("gettimeofday() as DispatchWallTime: " .. show(fromTimeval))

-- Date.getWallTime(from: "2018-03-08 13:30:00")
print("\ngetWallTime(from: \"2018-03-08 13:30:00\")")
local time = dispatch.walltime("2018-03-08 13:30:00")
local fromTable = dispatch.walltime{ year = 2018, month = 3, day = 8, hour = 13, min = 30, sec = 0 }
local fromNumber = dispatch.walltime(1520515800)
print("from the string:        " .. show(time))
print("from a date table:      " .. show(fromTable))
print("from Unix 1520515800:   " .. show(fromNumber))
print("string == table: " .. tostring(time == fromTable) .. ", string == number: " .. tostring(time == fromNumber))
print(string.format("one hour later - time = %.1f s", (time + 3600) - time))
print("time < now: " .. tostring(time < dispatch.walltime()))
print(string.format("time - timespec(86400) = %.0f s", time - fromTimespec))
scenario.check(near(unixSeconds(time), 1520515800, 1e-3), "\"2018-03-08 13:30:00\" is Unix 1520515800")
scenario.check(time == fromTable and time == fromNumber, "string, table and number forms agree")
scenario.check(near((time + 3600) - time, 3600), "DispatchWallTime: (t + 3600) - t == 3600")
scenario.check(time < dispatch.walltime() and not (time > dispatch.walltime()),
    "2018-03-08 is before now")
scenario.check(near(time - fromTimespec, 1520515800 - 86400, 1e-3), "difference of two wall times")

-- deadlines: both kinds work as timeouts (§7, group.wait)
print("\nTimeouts")
local group = dispatch.group()
group:enter()
local t0 = dispatch.now()
local ok1, why1 = group:wait(dispatch.now() + scenario.delay(0.2))
local waited1 = dispatch.now() - t0
print(string.format("group.wait(timeout: DispatchTime.now() + 0.2): %s after %.2f s", ok1 and "success" or why1, waited1))
t0 = dispatch.now()
local ok2, why2 = group:wait(dispatch.walltime() + scenario.delay(0.2))
local waited2 = dispatch.now() - t0
print(string.format("group.wait(wallTimeout: DispatchWallTime.now() + 0.2): %s after %.2f s", ok2 and "success" or why2, waited2))
group:leave()
local ok3 = group:wait(dispatch.now() + 2.0)
print("after leave, group.wait(timeout: now + 2.0): " .. (ok3 and "success" or "timeout"))
scenario.check(not ok1 and why1 == "timeout" and waited1 >= scenario.delay(0.2) - 0.001,
    "a DispatchTime deadline times out after the delay")
scenario.check(not ok2 and why2 == "timeout" and waited2 >= scenario.delay(0.2) - 0.001,
    "a DispatchWallTime deadline times out after the delay")
scenario.check(ok3 == true, "an empty group's wait succeeds at once")
