-- Counts the primes below 2,000,000 in the same run both serially in this interpreter and with
-- dispatch.concurrent_map over 8 parts in isolated worker interpreters, alternating the two
-- `reps` times, and prints the best time of each and the speedup. Run with a release build:
--   swift build -c release && .build/release/luadispatch run scripts/benchmarks/primes.lua [limit] [parts] [reps] [slices]
-- Each part counts `slices` interleaved slices of the range (part p: slices p, p + parts, ...),
-- so every part costs about the same: trial division gets dearer as numbers grow, and with one
-- consecutive range per part the last part alone would bound the speed-up (docs/performance.md).
-- The serial loop counts the very same parts, in order; `slices` 1 gives consecutive ranges.
local dispatch = require("dispatch")

local limit = tonumber(arg and arg[1]) or 2000000
local parts = tonumber(arg and arg[2]) or 8
local reps = tonumber(arg and arg[3]) or 3
local slices = tonumber(arg and arg[4]) or 16

-- Primes in [lo, hi] by trial division (deliberately CPU-bound Lua).
local function count(lo, hi)
    local n = 0
    for k = math.max(lo, 2), hi do
        local prime = true
        local d = 2
        while d * d <= k do
            if k % d == 0 then prime = false; break end
            d = d + 1
        end
        if prime then n = n + 1 end
    end
    return n
end

-- The primes counted by one part: its slices of [0, limit), `parts * slices` slices in all.
local function countPart(part)
    local n, all = 0, parts * slices
    local size = (limit - 1) // all + 1
    for s = part - 1, all - 1, parts do
        local lo = s * size
        if lo < limit then n = n + count(lo, math.min(lo + size - 1, limit - 1)) end
    end
    return n
end

local function serial()
    local total = 0
    for part = 1, parts do total = total + countPart(part) end
    return total, parts
end

local function parallel()
    local results = dispatch.concurrent_map(parts, function(part)
        return {countPart(part), dispatch.thread().number}
    end, {chunk = 1})
    local total, threads, nthreads = 0, {}, 0
    for _, r in ipairs(results) do
        total = total + r[1]
        if not threads[r[2]] then threads[r[2]], nthreads = true, nthreads + 1 end
    end
    return total, nthreads
end

-- Best wall time over the runs, with the CPU time (os.clock: all threads) of that run. When the
-- parallel run uses about as much CPU as the serial one, a poor speedup means a busy machine.
local function best(label, fn, bestSoFar)
    local t0, c0 = dispatch.now(), os.clock()
    local total, threads = fn()
    local wall, cpu = dispatch.now() - t0, os.clock() - c0
    io.write(("  %-15s %6.0f ms (%.0f ms CPU)\n"):format(label, wall * 1000, cpu * 1000))
    if bestSoFar and bestSoFar.wall <= wall then return bestSoFar end
    return {wall = wall, cpu = cpu, total = total, threads = threads}
end

local s, p
for _ = 1, reps do
    s = best("serial", serial, s)
    p = best("concurrent_map", parallel, p)
end
assert(s.total == p.total, ("counts differ: %d vs %d"):format(s.total, p.total))
print(("primes below %d: %d; best of %d runs:"):format(limit, s.total, reps))
print(("serial:         %8.0f ms (%.0f ms CPU)"):format(s.wall * 1000, s.cpu * 1000))
print(("concurrent_map: %8.0f ms (%.0f ms CPU; %d parts on %d threads)"):format(p.wall * 1000, p.cpu * 1000, parts, p.threads))
print(("speedup:        %8.2fx"):format(s.wall / p.wall))
