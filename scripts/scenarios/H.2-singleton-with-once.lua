-- title: Singleton with dispatch.once
-- seed: 002 (Creating singletons)
-- expect: 4 checks, 0.5 s of delays
--
-- The GCD Handbook, "Creating singletons":
--
--   + (instancetype) sharedInstance {
--       static dispatch_once_t onceToken;
--       static id sharedInstance;
--       dispatch_once(&onceToken, ^{
--           sharedInstance = [[self alloc] init];
--       });
--       return sharedInstance;
--   }
--
-- Here many threads ask for the shared instance at the same time; the
-- initialiser must run exactly once and everybody must get the same object.

local dispatch = require("dispatch")
local scenario = require("scenario")

local initCount = 0

local Manager = {}
Manager.__index = Manager

-- [[self alloc] init]: deliberately slow, so that the other callers arrive
-- while the first one is still initialising.
function Manager.new()
  initCount = initCount + 1
  print("initialiser running on " .. tostring(dispatch.thread()))
  dispatch.sleep(scenario.delay(0.5))
  return setmetatable({ created = dispatch.now() }, Manager)
end

-- static dispatch_once_t onceToken; static id sharedInstance;
local sharedInstance
local onceToken = dispatch.once(function()
  sharedInstance = Manager.new()
  return sharedInstance
end)

function Manager.sharedInstance()
  onceToken()
  return sharedInstance
end

-- Many concurrent callers from a concurrent queue.
local callers = 16
local got = {}           -- instance each caller got back
local returned = {}      -- what the once callable itself returned
local queue = dispatch.queue{ label = "com.example.callers", concurrent = true }
local group = dispatch.group()
for i = 1, callers do
  queue:async(function()
    returned[i] = onceToken()
    got[i] = Manager.sharedInstance()
  end, { group = group })
end

group:notify(dispatch.main, function()
  local same, sameReturned = true, true
  for i = 1, callers do
    if got[i] == nil or not rawequal(got[i], got[1]) then same = false end
    if not rawequal(returned[i], got[1]) then sameReturned = false end
  end
  print(string.format("%d callers, initialiser ran %d time(s)", callers, initCount))
  print("every caller got the same instance: " .. tostring(same))
  scenario.check(initCount == 1, "the initialiser runs once under many concurrent callers")
  scenario.check(same and getmetatable(got[1]) == Manager, "every caller gets the same shared instance")
  scenario.check(sameReturned, "every caller of the once callable gets the initialiser's result")

  -- Later calls do not run the initialiser again.
  local again = Manager.sharedInstance()
  scenario.check(rawequal(again, got[1]) and initCount == 1, "a later call returns the same instance without initialising")
end)
