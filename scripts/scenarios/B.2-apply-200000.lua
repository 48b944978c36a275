-- title: dispatch_apply over 200,000 numbers
-- seed: 004 (22.6 Iteration)
-- expect: 2 checks, 1 s of work
--
-- The chapter's loop and its dispatch_apply version:
--
--   enum { kNumberCount = 200000 };
--   static int numbers[kNumberCount];
--   static int results[kNumberCount];
--   for (int i = 0; i < kNumberCount; i++) {
--       results[i] = Work(numbers, i);
--   }
--
--   dispatch_queue_t queue = dispatch_get_global_queue(DISPATCH_QUEUE_PRIORITY_DEFAULT, 0);
--   dispatch_apply(kNumberCount, queue, ^(size_t index) {
--       results[index] = Work(numbers, index);
--   });
--
-- dispatch_apply is dispatch.concurrent_perform (indexes 1..n). It is
-- synchronous: when it returns, all the work is done. Lua code here runs
-- under one interpreter lock, so this shows the pattern and its results, not
-- a speed-up (dispatch.concurrent_map is the API for parallel CPU work).

local dispatch = require("dispatch")
local scenario = require("scenario")

local kNumberCount = 200000
local numbers, loopResults, results = {}, {}, {}
for i = 1, kNumberCount do numbers[i] = (i * 7919) % 100003 end

local function Work(nums, i)
  local x = nums[i]
  return (x * x + i) % 1000003
end

local t0 = dispatch.now()
for i = 1, kNumberCount do
  loopResults[i] = Work(numbers, i)
end
local tLoop = dispatch.now() - t0

local threads = {}
t0 = dispatch.now()
dispatch.concurrent_perform(kNumberCount, function(index)
  results[index] = Work(numbers, index)
  threads[dispatch.thread().number] = true
end)
local tApply = dispatch.now() - t0

local nthreads = 0
for _ in pairs(threads) do nthreads = nthreads + 1 end
local same, filled = true, 0
for i = 1, kNumberCount do
  if results[i] ~= nil then filled = filled + 1 end
  if results[i] ~= loopResults[i] then same = false end
end

print(string.format("loop: %d results in %.3f s", kNumberCount, tLoop))
print(string.format("concurrent_perform: %d results in %.3f s on %d thread(s)", filled, tApply, nthreads))
print("results identical: " .. tostring(same))
scenario.check(filled == kNumberCount, "concurrent_perform filled every one of the 200,000 results")
scenario.check(same, "concurrent_perform gives the same results as the loop")
