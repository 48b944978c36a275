-- title: group_async built from enter/leave
-- seed: 004 (22.9 Dispatch groups)
-- expect: 5 checks, 1 s of delays
--
-- The chapter shows how dispatch_group_async can be written with enter and
-- leave:
--
--   void groovy_dispatch_group_async(dispatch_group_t group,
--                                    dispatch_queue_t queue,
--                                    dispatch_block_t work) {
--       dispatch_retain(group);
--       dispatch_group_enter(group);
--       dispatch_async(queue, ^{
--           work();
--           dispatch_group_leave(group);
--           dispatch_release(group);
--       });
--   }
--
-- Enter before dispatching, so the group cannot look empty before the work
-- starts; leave after the work. In Lua the closure keeps `group` alive, which
-- is what the retain/release pair is for. The same workload is run with the
-- built-in form (q:async(fn, {group = g})) and with this one, and must behave
-- the same. Leaving a group too often crashes in C; here it raises an error.

local dispatch = require("dispatch")
local scenario = require("scenario")

local function groovy_dispatch_group_async(group, queue, work)
  group:enter()
  queue:async(function()
    work()
    group:leave()
  end)
end

local builtin = function(group, queue, work)
  queue:async(work, { group = group })
end

-- Runs 8 items of uneven length through `groupAsync`; returns what happened. The items run at
-- the same time, so they count themselves on a serial queue, one at a time.
local function run(name, groupAsync)
  local group = dispatch.group()
  local done, notifiedAt = 0, nil
  local counter = dispatch.queue("com.example." .. name .. ".done")
  local queue = dispatch.queue{ label = "com.example." .. name, concurrent = true }
  for i = 1, 8 do
    groupAsync(group, queue, function()
      dispatch.sleep(scenario.delay(0.05 * (i % 3 + 1)))
      counter:sync(function() done = done + 1 end)
    end)
  end
  local notifySeen = dispatch.semaphore(0)
  group:notify(dispatch.global(), function()
    notifiedAt = done
    notifySeen:signal()
  end)
  local early = group:wait(dispatch.now() + scenario.delay(0.01))   -- still busy: times out
  local ok = group:wait()
  local doneAtWait = done
  notifySeen:wait()
  print(string.format("%-28s short wait -> %-5s, wait -> %s with %d/8 done, notify saw %d/8 done",
    name .. ":", tostring(early), tostring(ok), doneAtWait, notifiedAt))
  return { early = early, ok = ok, doneAtWait = doneAtWait, notifiedAt = notifiedAt }
end

-- Run both on a background queue (a wait does not belong on the main thread).
dispatch.global():async(function()
  local a = run("dispatch_group_async", builtin)
  local b = run("groovy_dispatch_group_async", groovy_dispatch_group_async)

  scenario.check(a.ok and a.doneAtWait == 8 and a.notifiedAt == 8, "built-in group async: wait and notify after all 8 items")
  scenario.check(b.ok and b.doneAtWait == 8 and b.notifiedAt == 8, "enter/leave version: wait and notify after all 8 items")
  scenario.check(a.early == false and b.early == false, "both: a short wait times out while items are still running")

  -- An empty group: wait returns at once.
  local g = dispatch.group()
  scenario.check(g:wait(0) == true, "an empty group's wait returns at once")

  -- One leave too many.
  local ok, err = pcall(function() g:leave() end)
  print("leaving a group that was not entered: " .. (ok and "accepted?!" or ("error: " .. tostring(err))))
  scenario.check(not ok, "an unbalanced leave raises an error instead of crashing")
end)
