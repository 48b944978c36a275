-- title: dispatch_once: safe global initialisation
-- seed: 004 (22.7 Safe Global Initialization)
-- expect: 3 checks, 0.6 s of delays
--
-- The chapter's one-time initialisation:
--
--   static dispatch_once_t initializationPredicate;
--   static blah *stuffToInitialize;
--   dispatch_once(&initializationPredicate, ^{
--       stuffToInitialize = goop();
--   });
--
-- However many threads race to it, the block runs exactly once, and every
-- caller returns only after it has finished. For contrast, the same race
-- with a hand-made "if not initialised" check (the idea behind double-checked
-- locking, without the locking) initialises more than once. (The script's own
-- bookkeeping, which the callers share, is kept on a serial queue.)

local dispatch = require("dispatch")
local scenario = require("scenario")

local goopCalls = 0
local function goop()
  goopCalls = goopCalls + 1
  dispatch.sleep(scenario.delay(0.3))      -- expensive set-up; other threads arrive meanwhile
  return { created_by = tostring(dispatch.thread()) }
end

-- static dispatch_once_t initializationPredicate; static blah *stuffToInitialize;
local stuffToInitialize
local initializationPredicate = dispatch.once(function()
  stuffToInitialize = goop()
end)

-- 1. The naive version, for contrast.
local bookkeeping = dispatch.queue("bookkeeping")
local naiveCalls, naiveStuff = 0, nil
local function naiveInit()
  if naiveStuff == nil then
    bookkeeping:sync(function() naiveCalls = naiveCalls + 1 end)
    dispatch.sleep(scenario.delay(0.3))
    naiveStuff = {}
  end
end
dispatch.concurrent_perform(8, function() naiveInit() end)
print(string.format("hand-made check: 8 threads, initialiser ran %d time(s)", naiveCalls))

-- 2. dispatch_once, raced by 8 threads of concurrent_perform and 8 blocks on
--    global queues of different priorities.
local seen = {}
local group = dispatch.group()
local qoses = { "user_initiated", "default", "utility", "background" }
for i = 1, 8 do
  dispatch.global(qoses[(i - 1) % 4 + 1]):async(function()
    initializationPredicate()
    local got = stuffToInitialize
    bookkeeping:sync(function() seen[#seen + 1] = got end)
  end, { group = group })
end
dispatch.concurrent_perform(8, function()
  initializationPredicate()
  local got = stuffToInitialize
  bookkeeping:sync(function() seen[#seen + 1] = got end)
end)
group:wait()

local allSame = #seen == 16
for _, s in ipairs(seen) do
  if s == nil or not rawequal(s, stuffToInitialize) then allSame = false end
end
print(string.format("dispatch.once: 16 callers, goop() ran %d time(s), initialised by %s",
  goopCalls, stuffToInitialize and stuffToInitialize.created_by or "nobody"))
scenario.check(goopCalls == 1, "the once block runs exactly once")
scenario.check(allSame, "every caller sees the initialised value when its call returns")

initializationPredicate()
scenario.check(goopCalls == 1, "calling again later does not run it again")
