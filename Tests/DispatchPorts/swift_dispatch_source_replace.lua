-- Port of the "DispatchSource.replace" test of swiftlang/swift test/stdlib/Dispatch.swift.
-- checks: 5
--
-- A data-replace source on a serial queue receives the values 1, 2, 4, ... 2^24, each
-- replaced in by a work item that re-submits itself with asyncAfter 1 ms later on the same
-- queue: every value the handler sees is a power of two greater than the previous one (replace
-- keeps only the latest value, never a sum), and it sees the last one, 2^24, within 30 s.
-- Adapted: the handler's two expectTrue per run become two counts checked at the end (the
-- number of runs depends on timing); added: at most one run per value, and the last value seen
-- is 2^24. Work items are dispatch.work_item (with assign_current_context, as in Swift).
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

T.start("DispatchAPI (DispatchSource.replace)")
local g = dispatch.group()
local q = dispatch.queue("q")
local ds = dispatch.source.data_replace{queue = q}
local lastValue, nextValue = 0, 1
local maxValue = 1 << 24
local notIncreasing, notPowerOfTwo, runs = 0, 0, 0

ds:set_event_handler(function()
    local value = ds.data
    runs = runs + 1
    if not (value > lastValue) then notIncreasing = notIncreasing + 1 end -- Values must increase
    if value & (value - 1) ~= 0 then notPowerOfTwo = notPowerOfTwo + 1 end -- Must be power of two
    lastValue = value
    if value == maxValue then g:leave() end
end)
ds:resume()

g:enter()
local block
block = dispatch.work_item(function()
    ds:merge(nextValue)
    nextValue = nextValue << 1
    if nextValue <= maxValue then q:after(0.001, block) end
end, {assign_current_context = true})
q:after(0.001, block)

local result = g:wait(30)
T.long("result == .success", result, true)
T.long("values must increase", notIncreasing, 0)
T.long("values must be powers of two", notPowerOfTwo, 0)
T.long_less_than_or_equal("handler runs (at most one per value)", runs, 25)
T.long("last value seen", lastValue, maxValue)
ds:cancel()
T.stop()
