-- title: Loop to concurrent_perform, with striding
-- seed: 003 (Performing loop iterations concurrently)
-- expect: 3 checks, 0.1 s of delays
--
-- Apple's dispatch queue guide, "Performing loop iterations concurrently":
--
--   for (i = 0; i < count; i++) {
--      printf("%u\n",i);
--   }
--
--   dispatch_queue_t queue = dispatch_get_global_queue(DISPATCH_QUEUE_PRIORITY_DEFAULT, 0);
--   dispatch_apply(count, queue, ^(size_t i) {
--      printf("%u\n",i);
--   });
--
-- dispatch_apply is dispatch.concurrent_perform here (indexes 1..count, not
-- 0..count-1). The guide then suggests striding when each iteration does very
-- little: group `stride` iterations into one block, and do the few left over
-- in a plain loop ("Improving on loop code" in Apple's guide).

local dispatch = require("dispatch")
local scenario = require("scenario")

-- 1. The guide's example, small enough to print: the loop prints 1..count in
--    order; concurrent_perform prints the same numbers as its iterations end.
--    Each iteration does an uneven amount of blocking work (a short sleep of 0 to
--    2 units), and other iterations run on other threads meanwhile, so the numbers
--    come out as iterations end: not in index order, and not always in the same
--    order from run to run. (Iterations as short as printing a number would mostly
--    end in index order: the thread that runs one usually takes the next one too.)
--    Iterations run at the same time and may interleave at any instruction, so
--    each records its number on a serial queue, one at a time.
local count = 12
local loopOrder, applyOrder = {}, {}
local recorder = dispatch.queue("applyOrder")
for i = 1, count do loopOrder[#loopOrder + 1] = i end
print("for loop:            " .. table.concat(loopOrder, " "))
dispatch.concurrent_perform(count, function(i)
  dispatch.sleep(scenario.delay(0.01) * ((i * 5) % 3))   -- uneven work
  recorder:sync(function() applyOrder[#applyOrder + 1] = i end)
end)
print("concurrent_perform:  " .. table.concat(applyOrder, " "))
local seen, once = {}, true
for _, i in ipairs(applyOrder) do
  if seen[i] then once = false end
  seen[i] = true
end
for i = 1, count do if not seen[i] then once = false end end
scenario.check(#applyOrder == count and once, "concurrent_perform runs every index 1..count exactly once")

-- 2. Real work: the same results from the loop, from concurrent_perform and
--    from concurrent_perform with striding.
local function work(i)          -- a little arithmetic per iteration
  local x = i
  for _ = 1, 20 do x = (x * 1103515245 + 12345) % 2147483648 end
  return x
end

local n = 10002                 -- not a multiple of the stride: 2 are left over
local loopResults, applyResults, strideResults = {}, {}, {}

local t0 = dispatch.now()
for i = 1, n do loopResults[i] = work(i) end
local tLoop = dispatch.now() - t0

t0 = dispatch.now()
dispatch.concurrent_perform(n, function(i) applyResults[i] = work(i) end)
local tApply = dispatch.now() - t0

local stride = 4
t0 = dispatch.now()
dispatch.concurrent_perform(n // stride, function(idx)
  local j = (idx - 1) * stride + 1
  local j_stop = j + stride
  repeat
    strideResults[j] = work(j)
    j = j + 1
  until j >= j_stop
end)
for i = n - (n % stride) + 1, n do strideResults[i] = work(i) end   -- the remainder
local tStride = dispatch.now() - t0

print(string.format("%d iterations: loop %.3f s, concurrent_perform %.3f s (%d blocks), striding by %d %.3f s (%d blocks + %d in a loop)",
  n, tLoop, tApply, n, stride, tStride, n // stride, n % stride))

local sameApply, sameStride = true, true
for i = 1, n do
  if applyResults[i] ~= loopResults[i] then sameApply = false end
  if strideResults[i] ~= loopResults[i] then sameStride = false end
end
scenario.check(#applyResults == n and sameApply, "concurrent_perform gives the same results as the loop")
scenario.check(#strideResults == n and sameStride, "concurrent_perform with striding gives the same results as the loop")
