-- Port of swiftlang/swift test/stdlib/Dispatch.swift (the Swift overlay's "DispatchAPI" suite),
-- the tests that are not about data (swift_dispatch_data.lua) or DispatchSource.replace
-- (swift_dispatch_source_replace.lua).
-- checks: 20
--
-- constants: the process exit event, the empty data's end index, the concurrent attribute;
-- OS_OBJECT support: the main queue is a queue; DispatchGroup creation; dispatch_block_t
-- identity: a work item submitted to the main queue can then be cancelled without a trap;
-- dispatch_data_t enumeration: the empty data enumerates nothing; DispatchTime and
-- DispatchWallTime comparisons (now < now + 1 ms < distant future, checkComparable's order and
-- equalities); DispatchTime.addSubtract: now + infinity is the distant future and now -
-- infinity is uptime 1 ns; DispatchTime.uptimeNanos: now + 1 s is 10^9 ns after now.
-- Adapted: Swift's type checks become __name checks; `.exit`'s raw value (Darwin's
-- NOTE_EXIT) becomes the event name "exit" that a process source reports; DispatchTime's
-- distantFuture is `now + math.huge` (one fixed time, whatever `now`); DispatchWallTime's is
-- `walltime() + math.huge`, checked for order only (the overlay's wall-time arithmetic at the
-- limits gives artifacts of its encoding, e.g. now - infinity == distantFuture - 1 ns).
-- Left out: dispatch_block_t conversions (a Swift closure/block bridging test); NaN operands,
-- which the overlay turns into distantFuture and this API rejects as an error naming the
-- argument (checked instead, as documented in docs/api.md).
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

local function name(v)
    local mt = debug.getmetatable(v) -- (getmetatable is protected)
    return mt and mt.__name
end

T.start("DispatchAPI")

-- constants
local proc = dispatch.source.process{pid = dispatch.pid(), queue = dispatch.main}
T.long("ProcessEvent.exit is a process source's event", proc ~= nil, true)
proc = nil
T.long("DispatchData.empty.endIndex", #dispatch.data(), 0)
local cq = dispatch.queue{label = "concurrent", concurrent = true}
T.long("DispatchQueue.Attributes.concurrent", cq.concurrent, true)

-- OS_OBJECT support
T.long("main queue is a DispatchQueue", name(dispatch.main), "dispatch.queue")

-- DispatchGroup creation
T.ptr_notnull("DispatchGroup()", dispatch.group())

-- dispatch_block_t identity
local block = dispatch.work_item(function() local _ = 1 end, {inherit_qos = true})
dispatch.main:async(block)
-- This will trap if the block's pointer identity is not preserved.
block:cancel()
T.long("work item cancelled after submission", block:is_cancelled(), true)

-- dispatch_data_t enumeration: ensure we can iterate the empty iterator
local n = 0
for _ in dispatch.data():regions() do n = n + 1 end
T.long("empty data enumerates nothing", n, 0)

-- DispatchTime comparisons (checkComparable over [now, now + 1 ms, distantFuture])
do
    local now = dispatch.now()
    local values = {now, now + 0.001, now + math.huge}
    local ok = true
    for i = 1, 3 do
        for j = 1, 3 do
            if (values[i] < values[j]) ~= (i < j) or (values[i] == values[j]) ~= (i == j)
                or (values[i] <= values[j]) ~= (i <= j) then ok = false end
        end
    end
    T.long("DispatchTime comparisons", ok, true)
end
do
    local now = dispatch.walltime()
    local values = {now, now + 0.001, now + math.huge}
    local ok = true
    for i = 1, 3 do
        for j = 1, 3 do
            if (values[i] < values[j]) ~= (i < j) or (values[i] == values[j]) ~= (i == j)
                or (values[i] <= values[j]) ~= (i <= j) then ok = false end
        end
    end
    T.long("DispatchWallTime comparisons", ok, true)
end

-- DispatchTime.addSubtract
local distantFuture = dispatch.now() + math.huge
local later = dispatch.now()
while later == dispatch.now() do end -- the next reading of the clock differs
T.long("now + infinity == distantFuture", dispatch.now() + math.huge == distantFuture, true)
T.long("now - infinity == DispatchTime(uptimeNanoseconds: 1)", (dispatch.now() - math.huge).seconds, 1e-9)
T.long("distantFuture is ~146 years away", distantFuture - dispatch.now() > 146 * 365 * 86400, true)
local ok, err = pcall(function() return dispatch.now() + 0 / 0 end)
T.long("now + nan raises", ok, false)
T.long("... naming the argument", tostring(err):find("NaN", 1, true) ~= nil, true)
ok = pcall(function() return dispatch.now() - 0 / 0 end)
T.long("now - nan raises", ok, false)

-- DispatchWallTime.addSubtract
local wnow = dispatch.walltime()
T.long("walltime + infinity is later than any finite time", wnow + math.huge > wnow + 1e9, true)
T.long("walltime - infinity is earlier than any finite time", wnow - math.huge < wnow - 1e9, true)
ok = pcall(function() return dispatch.walltime() + 0 / 0 end)
T.long("walltime + nan raises", ok, false)

-- DispatchTime.uptimeNanos
local seconds = 1
local nowMach = dispatch.now()
local oneSecondFromNowMach = nowMach + seconds
T.long("one second is NSEC_PER_SEC", math.floor((oneSecondFromNowMach - nowMach) * 1e9 + 0.5), 1000000000)
T.long("uptimeNanoseconds difference", math.floor((oneSecondFromNowMach.seconds - nowMach.seconds) * 1e9 + 0.5), 1000000000)

T.stop()
