-- Counts the primes below 2,000,000 twice in the same run: serially in this interpreter, then
-- with dispatch.concurrent_map over 8 ranges in isolated worker interpreters.
-- Prints both times and the speedup. Run with a release build:
--   swift build -c release && .build/release/luadispatch run scripts/bench/primes.lua [limit] [parts]
local dispatch = require("dispatch")

local limit = tonumber(arg and arg[1]) or 2000000
local parts = tonumber(arg and arg[2]) or 8

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

local function range(part)
    local size = (limit - 1) // parts + 1
    local lo = (part - 1) * size
    return lo, math.min(lo + size - 1, limit - 1)
end

local t0, c0 = dispatch.now(), os.clock()
local serial = 0
for part = 1, parts do serial = serial + count(range(part)) end
local tSerial, cSerial = dispatch.now() - t0, os.clock() - c0

t0, c0 = dispatch.now(), os.clock()
local counts = dispatch.concurrent_map(parts, function(part)
    return {count(range(part)), dispatch.thread().number}
end, {chunk = 1})
local tParallel, cParallel = dispatch.now() - t0, os.clock() - c0
local parallel, threads, nthreads = 0, {}, 0
for _, c in ipairs(counts) do
    parallel = parallel + c[1]
    if not threads[c[2]] then threads[c[2]], nthreads = true, nthreads + 1 end
end

assert(serial == parallel, ("counts differ: %d vs %d"):format(serial, parallel))
print(("primes below %d: %d"):format(limit, serial))
-- CPU time (os.clock, all threads) shows whether a poor speedup is overhead or a busy machine.
print(("serial:         %8.0f ms (%.0f ms CPU)"):format(tSerial * 1000, cSerial * 1000))
print(("concurrent_map: %8.0f ms (%.0f ms CPU; %d parts on %d threads)"):format(tParallel * 1000, cParallel * 1000, parts, nthreads))
print(("speedup:        %8.2fx"):format(tSerial / tParallel))
