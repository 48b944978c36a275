-- title: Isolation queue: IdentityMap with concurrent reads and barrier writes
-- seed: 002 (Isolation queues)
-- expect: 4 checks, 1 s of delays
--
-- The GCD Handbook, "Isolation queues": reads with dispatch_sync on a
-- concurrent queue (many at once), writes with dispatch_barrier_async (alone):
--
--   class IdentityMap<T: Identifiable> {
--       var dictionary = Dictionary<String, T>()
--       let accessQueue = dispatch_queue_create("com.khanlou.isolation.queue", DISPATCH_QUEUE_CONCURRENT)
--       func object(withID ID: String) -> T? {
--           var result: T? = nil
--           dispatch_sync(accessQueue, { result = dictionary[ID] as T? })
--           return result
--       }
--       func addObject(object: T) {
--           dispatch_barrier_async(accessQueue, { dictionary[object.ID] = object })
--       }
--   }
--
-- Blocks of the concurrent queue may interleave at any instruction, as threads
-- do in Swift, but an update as short as one table store is rarely caught
-- halfway. To make the readers-writers problem visible, a write here is a
-- read-modify-write with a pause in the middle (as a Swift Dictionary update is
-- not atomic): it stores the object, pauses, then bumps `count`. A reader
-- checks that `count` matches the entries it can see. (The readers' own tallies
-- are theirs alone until each adds them up, on a serial queue, at its end.)

local dispatch = require("dispatch")
local scenario = require("scenario")

local IdentityMap = {}
IdentityMap.__index = IdentityMap

function IdentityMap.new(label, useBarrier)
  return setmetatable({
    dictionary = {},
    count = 0,
    useBarrier = useBarrier,
    accessQueue = dispatch.queue{ label = label, concurrent = true },
  }, IdentityMap)
end

local function entries(t)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n
end

-- object(withID:): a synchronous read; reads run concurrently with each other.
-- Also returns whether the map looked consistent (count == entries) to the reader.
function IdentityMap:object(ID)
  local result, consistent
  self.accessQueue:sync(function()
    result = self.dictionary[ID]
    consistent = (entries(self.dictionary) == self.count)
  end)
  return result, consistent
end

-- addObject: an asynchronous barrier write.
function IdentityMap:addObject(object)
  local write = function()
    local n = self.count                    -- read ...
    self.dictionary[object.ID] = object
    dispatch.sleep(scenario.delay(0.02))    -- ... the update takes a while ...
    self.count = n + 1                      -- ... write back
  end
  if self.useBarrier then
    self.accessQueue:barrier_async(write)
  else
    self.accessQueue:async(write)           -- for comparison only: no barrier
  end
end

-- Writers add N objects while readers read concurrently; `done(map, reads)`
-- runs on the main queue once everything is finished.
local function exercise(map, N, done)
  local group = dispatch.group()
  local reads = { total = 0, found = 0, inconsistent = 0 }
  local tally = dispatch.queue(map.accessQueue.label .. ".tally")
  for i = 1, N do
    dispatch.global("default"):async(function()
      map:addObject({ ID = "id" .. i, name = "object " .. i })
    end, { group = group })
  end
  -- Readers come from elsewhere in the "app": the user-initiated global queue.
  -- (Were they on the default queue too, the blocked readers could hold every
  -- worker thread the barrier block needs; the pool on Linux only grows by
  -- about one thread a second.)
  for r = 1, 4 do
    dispatch.global("user_initiated"):async(function()
      local total, found, inconsistent = 0, 0, 0
      for k = 1, 15 do
        local obj, consistent = map:object("id" .. ((r * 7 + k) % N + 1))
        total = total + 1
        if obj then found = found + 1 end
        if not consistent then inconsistent = inconsistent + 1 end
        dispatch.sleep(scenario.delay(0.005))
      end
      tally:sync(function()
        reads.total = reads.total + total
        reads.found = reads.found + found
        reads.inconsistent = reads.inconsistent + inconsistent
      end)
    end, { group = group })
  end
  group:notify(dispatch.main, function()
    -- Wait for the writes still queued (a barrier waits for everything before it).
    map.accessQueue:barrier_sync(function() end)
    done(map, reads)
  end)
end

local N = 20

-- For comparison: the same map with plain async writes.
exercise(IdentityMap.new("com.example.unprotected.queue", false), N, function(map, reads)
  print(string.format("without barrier: %d objects stored, count = %d (%d writes lost), %d of %d reads saw a half-done write",
    entries(map.dictionary), map.count, N - map.count, reads.inconsistent, reads.total))
  print("(the numbers above depend on timing and can change from run to run)")

  -- The Handbook's version, with barrier writes.
  exercise(IdentityMap.new("com.khanlou.isolation.queue", true), N, function(map2, reads2)
    print(string.format("with barrier:    %d objects stored, count = %d (%d writes lost), %d of %d reads saw a half-done write",
      entries(map2.dictionary), map2.count, N - map2.count, reads2.inconsistent, reads2.total))
    scenario.check(entries(map2.dictionary) == N and map2.count == N, "no lost writes with barrier writes")
    scenario.check(reads2.inconsistent == 0, "reads only ever see whole writes (count matches the entries)")
    scenario.check(reads2.total == 60, "every read returned")
    local obj = map2:object("id7")
    print("object(withID: \"id7\") -> " .. (obj and obj.name or "nil"))
    scenario.check(obj ~= nil and obj.name == "object 7", "a read after the writes finds the object")
  end)
end)
