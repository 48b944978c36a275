-- Fairness: one CPU-bound block alone, then two equal ones at once on a concurrent queue. Prints
-- the solo time and when the first and the second of the pair finished (seconds). With the
-- blocks taking turns on the interpreter the first finishes near twice the solo time; run one
-- after the other it would finish at the solo time.
-- usage: luadispatch run fairness.lua [iterations]
local dispatch = require("dispatch")
local iterations = math.tointeger(tonumber((...) or "") or 3e7)

local function work()
  local x = 0
  for i = 1, iterations do x = x + i % 7 end
  return x
end

local q = dispatch.queue{label = "fairness", concurrent = true}
local t0 = dispatch.now()
q:sync(work)
local solo = dispatch.now() - t0

local g, ends, results = dispatch.group(), {}, dispatch.queue("results")
t0 = dispatch.now()
for _ = 1, 2 do
  q:async(function()
    work()
    local t = dispatch.now() - t0
    results:sync(function() ends[#ends + 1] = t end)
  end, {group = g})
end
g:wait()
table.sort(ends)
print(("%.4f s solo, first of two at %.4f s, second at %.4f s"):format(solo, ends[1], ends[2]))
