-- title: The main queue keeps ticking while a block computes in pure Lua
-- seed: 004 (22.5 WordCounter: the UI stays responsive while the count runs), with real computation instead of a sleep
-- expect: 4 checks, 3 s of work
--
-- What switching between blocks is for. GCD moves heavy work off the main thread so that the
-- main thread stays responsive; the tutorials simulate the heavy work with a sleep, which
-- releases the interpreter anyway. Here the work is real: a block on the default global queue
-- counts the primes below 400,000 by trial division (about a third of a second of pure Lua on an
-- idle machine, with no blocking call at all), while a 10 ms repeating timer on the main queue
-- stands for the UI.
--
-- The timer keeps ticking: when the computing block has held the interpreter for the switch
-- interval (5 ms by default) while the main thread waits for it, it gives the interpreter up at
-- its next instruction and takes it back after the tick has run. The script prints how often the
-- timer ticked during the computation and the longest gap between two ticks, and checks that the
-- gap stays below the length of the computation (generously: under three quarters of it, or
-- 0.25 s; a loaded machine once kept the main thread off the cores for half of it), not how
-- close it comes to 10 ms.
--
-- With switching turned off (`LUADISPATCH_SWITCH_INTERVAL=0 luadispatch scenarios run S.1`, or
-- `dispatch.switch_interval(0)`: a block keeps the interpreter until it waits) the same script
-- shows the freeze: no tick runs until the computation is over, the longest gap is the whole
-- computation, and the checks on the ticks fail.
local dispatch = require("dispatch")
local scenario = require("scenario")

local LIMIT, PRIMES = 400000, 33860      -- primes below 400,000 (a sieve says so)
local INTERVAL = 0.01

--- Counts the primes below `limit` by trial division: pure Lua, no call into the runtime.
local function countPrimes(limit)
  local count = 0
  for n = 2, limit - 1 do
    local prime, d = true, 2
    while d * d <= n do
      if n % d == 0 then prime = false; break end
      d = d + 1
    end
    if prime then count = count + 1 end
  end
  return count
end

-- The timer and everything it records belong to the main queue (serial): no other block
-- touches them.
local ticks, offMain, started = {}, 0, false
local timer

--- Runs on the main queue once the computation is over, with what the computing block measured.
local function finished(from, to, count, computedOnMain)
  -- A few more ticks, so that the gap the computation may have caused is closed by a tick.
  dispatch.main:after(5 * INTERVAL, function()
    timer:cancel()
    local during, longest = 0, 0
    for k = 2, #ticks do
      local a, b = ticks[k - 1], ticks[k]
      if b > from and a < to then                 -- a gap that overlaps the computation
        if b - a > longest then longest = b - a end
        if b < to then during = during + 1 end
      end
    end
    local duration = to - from
    print(string.format("computed for %.3f s (switch interval %g s): %d primes below %d", duration,
      dispatch.switch_interval(), count, LIMIT))
    print(string.format("the main-queue timer ticked %d times meanwhile; longest gap between ticks: %.1f ms",
      during, longest * 1000))
    scenario.check(not computedOnMain and count == PRIMES,
      "the block computed off the main thread and found the " .. PRIMES .. " primes below " .. LIMIT)
    scenario.check(during >= 5, "the main-queue timer kept ticking while the block computed")
    scenario.check(longest < math.max(0.25, duration * 0.75),
      "the longest gap between ticks stays below the length of the computation (no freeze)")
    scenario.check(offMain == 0, "every tick ran on the main thread")
  end)
end

timer = dispatch.source.timer{
  interval = INTERVAL,
  queue = dispatch.main,
  handler = function()
    ticks[#ticks + 1] = dispatch.now()
    if not dispatch.thread().is_main then offMain = offMain + 1 end
    if #ticks == 3 and not started then           -- the timer runs: start the heavy work
      started = true
      print("tick " .. #ticks .. ": starting the computation on a global queue")
      dispatch.global():async(function()
        local from = dispatch.now()
        local count = countPrimes(LIMIT)
        local to = dispatch.now()
        local onMain = dispatch.thread().is_main
        dispatch.main:async(function() finished(from, to, count, onMain) end)
      end)
    end
  end,
}
timer:resume()
