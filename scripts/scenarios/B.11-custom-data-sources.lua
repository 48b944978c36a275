-- title: Custom DATA_ADD and DATA_OR sources
-- seed: 004 (22.10.5 Dispatch sources: custom)
-- expect: 12 checks, 0.5 s of delays
--
-- The chapter's custom sources: DISPATCH_SOURCE_TYPE_DATA_ADD (and _OR) fired
-- with
--
--   void dispatch_source_merge_data(dispatch_source_t source, unsigned long data);
--
-- The data is merged into what has accumulated (added, or OR-ed); the source
-- fires only for non-zero data, and the accumulated value is reset after each
-- handler run. Merges that arrive before the handler runs coalesce into one
-- run. Here: src:merge(n), with src.data read in the handler.
--
-- A handler runs on its source's queue at the same time as the script goes on, so the script
-- reads what a handler recorded through that queue: a snapshot taken between two handler runs.

local dispatch = require("dispatch")
local scenario = require("scenario")

-- A copy of what a handler recorded in `state`, taken on the handler's queue.
local function snapshot(queue, state)
  return queue:sync(function()
    return { runs = state.runs, total = state.total, values = { table.unpack(state.values) } }
  end)
end

-- Waits (10 s at most) until `cond` holds for a snapshot; checks that it does; returns it.
local function waitFor(queue, state, cond, what)
  local started = dispatch.now()
  local seen = snapshot(queue, state)
  while not cond(seen) and dispatch.now() - started < 10 do
    dispatch.sleep(0.01)
    seen = snapshot(queue, state)
  end
  scenario.check(cond(seen), what)
  return seen
end

-- DATA_ADD: a progress counter. ------------------------------------------
local progress = dispatch.queue("com.example.progress")
local add = { runs = 0, total = 0, values = {} }
local adder
adder = dispatch.source.data_add{
  queue = progress,
  handler = function()
    add.runs = add.runs + 1
    add.total = add.total + adder.data
    add.values[#add.values + 1] = adder.data
  end,
}
adder:resume()

-- Zero does not fire the source.
adder:merge(0)
dispatch.sleep(scenario.delay(0.3))
local seen = snapshot(progress, add)
print("DATA_ADD: merge(0) -> handler runs: " .. seen.runs)
scenario.check(seen.runs == 0, "DATA_ADD: merging 0 does not fire the source")

-- While suspended, merges 1..5 accumulate; on resume one handler run gets 15.
adder:suspend()
for i = 1, 5 do adder:merge(i) end
dispatch.sleep(scenario.delay(0.2))
scenario.check(snapshot(progress, add).runs == 0, "DATA_ADD: a suspended source does not run its handler")
adder:resume()
seen = waitFor(progress, add, function(a) return a.runs >= 1 end, "DATA_ADD: the handler runs after resume")
print(string.format("DATA_ADD: merged 1+2+3+4+5 while suspended -> %d handler run(s), data %s", seen.runs, table.concat(seen.values, ", ")))
scenario.check(seen.runs == 1 and seen.values[1] == 15, "DATA_ADD: coalesced merges add up (1+2+3+4+5 = 15) in one handler run")

-- Concurrent merges of 1..100 from many threads: the handler may run fewer
-- times than there were merges, but the values always add up.
dispatch.concurrent_perform(100, function(i) adder:merge(i) end)
seen = waitFor(progress, add, function(a) return a.total >= 15 + 5050 end, "DATA_ADD: every concurrent merge arrives")
print(string.format("DATA_ADD: 100 concurrent merges of 1..100 -> %d handler runs, total %d", seen.runs - 1, seen.total - 15))
scenario.check(seen.total == 15 + 5050, "DATA_ADD: merged values add up (1..100 = 5050)")
scenario.check(seen.runs - 1 >= 1 and seen.runs - 1 <= 100, "DATA_ADD: at most one handler run per merge")
adder:cancel()

-- DATA_OR: a set of event flags. -----------------------------------------
local FLAG_READ, FLAG_WRITE, FLAG_ERROR, FLAG_CLOSE = 1, 2, 4, 8
local flagsQueue = dispatch.queue("com.example.flags")
local ors = { runs = 0, total = 0, values = {} }   -- total: every flag seen, OR-ed
local flags
flags = dispatch.source.data_or{
  queue = flagsQueue,
  handler = function()
    ors.runs = ors.runs + 1
    ors.total = ors.total | flags.data
    ors.values[#ors.values + 1] = flags.data
  end,
}
flags:resume()

flags:suspend()
for _, f in ipairs({ FLAG_READ, FLAG_WRITE, FLAG_READ, FLAG_CLOSE, FLAG_WRITE }) do flags:merge(f) end
flags:resume()
seen = waitFor(flagsQueue, ors, function(o) return o.runs >= 1 end, "DATA_OR: the handler runs after resume")
print(string.format("DATA_OR: merged 1|2|1|8|2 while suspended -> %d handler run(s), data %s", seen.runs, table.concat(seen.values, ", ")))
scenario.check(seen.runs == 1 and seen.values[1] == (FLAG_READ | FLAG_WRITE | FLAG_CLOSE),
  "DATA_OR: coalesced merges OR together (1|2|1|8|2 = 11), not add")

-- The accumulated value was reset after the handler: a new merge of 4 gives 4.
flags:merge(FLAG_ERROR)
seen = waitFor(flagsQueue, ors, function(o) return o.runs >= 2 end, "DATA_OR: a later merge fires again")
print("DATA_OR: merged 4 afterwards -> data " .. tostring(seen.values[2]))
scenario.check(seen.values[2] == FLAG_ERROR, "DATA_OR: the data is reset after each handler run")
scenario.check(seen.total == 15, "DATA_OR: all four flags were seen")
flags:cancel()
