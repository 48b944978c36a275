-- Attacks that crashed the process: nested blocking calls, numbers at the edge of range,
-- metamethods and __gc of every type through the debug library.
--
-- Part of the attack suite (AttackSuiteTests reads every .lua file here): scripts an attacker
-- would try against `luadispatch --sandbox --memory-limit 64M --time-limit 2`. Each attempt
-- starts with a line
--   -- @@ name | expect | options
-- and runs to the next such line, as one `-e` chunk. expect:
--   time       ends with the time limit's message within the limit + 0.5 s
--   memory     ends with "not enough memory", peak resident memory under the limit + 32 MiB
--              (run with --time-limit 10: making a million objects takes seconds in a debug
--              or AddressSanitizer build on a loaded machine)
--   error: S   ends with an error containing S (status 1)
--   ok         ends with status 0
--   limit      ends with either limit's error (and that limit's bounds)
--   survive    ends with status 0 or 1
-- Every attempt: no exit by a signal, no hang, no PANIC. options: `nosandbox` (the debug
-- library, dispatch.io), `uses=NAME` (the `-- @@ prelude NAME` block goes first), `gap` (a
-- known gap, docs/reliability.md: it must not end by a signal or hang, and is reported, not
-- failed, when it misses its expectation).

-- @@ prelude objects
local d = require('dispatch')
local pool = d.workers{count = 1}
local objects = {
  now = d.now(), walltime = d.walltime(), queue = d.queue('q'), main = d.main, global = d.global(),
  group = d.group(), semaphore = d.semaphore(1), work_item = d.work_item(function() end),
  timer = d.source.timer{deadline = 1000, handler = function() end},
  data_add = d.source.data_add{handler = function() end}, data = d.data('abc'), channel = d.channel(),
  io = d.io{path = '/dev/null', mode = 'r'}, task = d.task(function() end), pool = pool,
  job = pool:submit(function() end), key = d.specific_key('k'),
}
local values = {1, -1, 0/0, math.maxinteger, 'x', {}, print, true, io.stdout, coroutine.create(print)}
for _, v in pairs(objects) do values[#values + 1] = v end
local function cleanup() objects.pool:close() objects.io:close() objects.timer:cancel() objects.data_add:cancel() end
local function hammer(name)
  local mt = debug.getmetatable(objects[name])
  local names = {}
  for k in pairs(mt) do names[#names + 1] = k end
  table.sort(names)
  for _, k in ipairs(names) do
    local f = rawget(mt, k)
    if type(f) == 'function' then
      for _, v in ipairs(values) do
        pcall(f, v) pcall(f, v, v) pcall(f, v, 1) pcall(f, 1, v) pcall(f, objects[name], v) pcall(f, v, objects[name])
      end
      if k ~= '__gc' and k ~= '__close' then pcall(f, objects[name]) end
    end
  end
  -- The object still works after every call (its __gc called by hand included).
  collectgarbage() collectgarbage()
  print(name, tostring(objects[name]) ~= nil)
  cleanup()
end

-- ===== Crashes from inside the sandbox: nested blocking calls =====

-- @@ nested global sync | error: stack overflow |
local d = require('dispatch')
local function f(n) if n > 0 then d.global():sync(function() f(n - 1) end) end end
f(20000)

-- @@ nested barrier_sync | error: stack overflow |
local d = require('dispatch')
local function f(n) if n > 0 then d.queue{label = 'c', concurrent = true}:barrier_sync(function() f(n - 1) end) end end
f(20000)

-- @@ nested sync of work items | error: stack overflow |
local d = require('dispatch')
local function f(n) if n > 0 then d.global():sync(d.work_item(function() f(n - 1) end)) end end
f(20000)

-- @@ nested perform | error: stack overflow |
local d = require('dispatch')
local function f(n) if n > 0 then d.work_item(function() f(n - 1) end):perform() end end
f(20000)

-- @@ nested concurrent_perform | error: stack overflow |
local d = require('dispatch')
local function f(n) if n > 0 then d.concurrent_perform(1, function() f(n - 1) end) end end
f(20000)

-- @@ nested blocking calls of every kind in turn | error: stack overflow |
local d = require('dispatch')
local kinds = {
  function(g) d.global():sync(g) end,
  function(g) d.queue{concurrent = true}:barrier_sync(g) end,
  function(g) d.work_item(g):perform() end,
  function(g) d.concurrent_perform(1, g) end,
  function(g) d.queue('s'):sync(d.work_item(g)) end,
}
local function f(n) if n > 0 then kinds[n % #kinds + 1](function() f(n - 1) end) end end
f(20000)

-- @@ nested syncs in an async block | error: stack overflow |
local d = require('dispatch')
local function f(n) if n > 0 then d.global():sync(function() f(n - 1) end) end end
local g = d.group()
d.queue('a'):async(function() f(20000) end, {group = g})
g:wait()

-- @@ nested syncs in a task | error: stack overflow |
local d = require('dispatch')
local function f(n) if n > 0 then d.global():sync(function() f(n - 1) end) end end
d.task(function() f(20000) end):wait()

-- @@ nested syncs in a timer handler | error: stack overflow |
local d = require('dispatch')
local function f(n) if n > 0 then d.global():sync(function() f(n - 1) end) end end
local t
t = d.source.timer{deadline = 0, handler = function() t:cancel() f(20000) end}
t:resume()

-- @@ nested syncs through coroutines | error: stack overflow |
local d = require('dispatch')
local function f(n) if n > 0 then coroutine.wrap(function() d.global():sync(function() f(n - 1) end) end)() end end
f(20000)

-- @@ nested syncs in sort comparators | error: stack overflow |
local d = require('dispatch')
local function f(n)
  if n > 0 then table.sort({3, 2, 1}, function(a, b) d.global():sync(function() f(n - 1) end) return a < b end) end
end
f(20000)

-- @@ nested syncs through __index | error: stack overflow |
local d = require('dispatch')
local t = setmetatable({}, {__index = function(t, n) if n > 0 then return d.global():sync(function() return t[n - 1] end) end end})
local _ = t[20000]

-- @@ nested syncs each in pcall | ok |
local d = require('dispatch')
local function f(n) if n > 0 then pcall(d.global().sync, d.global(), function() f(n - 1) end) end end
f(20000)
f(20000)

-- @@ nested once | survive |
local d = require('dispatch')
local function f(n) if n > 0 then d.once(function() f(n - 1) end)() end end
f(20000)

-- @@ nested await | survive |
local d = require('dispatch')
local function f(n) if n > 0 then d.await(function(resume) f(n - 1) resume() end) end end
f(20000)

-- @@ nested syncs on many threads at once | error: stack overflow |
local d = require('dispatch')
local function f(n) if n > 0 then d.global():sync(function() f(n - 1) end) end end
d.concurrent_perform(4, function() f(20000) end)

-- ===== Crashes from inside the sandbox: numbers at the edge of range =====

-- @@ walltime year 3000 | error: out of range |
require('dispatch').walltime{year = 3000, month = 1, day = 1}

-- @@ walltime of year 1 | error: out of range |
require('dispatch').walltime('0001-01-01 00:00:00')

-- @@ walltime table fields at the extremes | ok |
local d = require('dispatch')
for _, k in ipairs{'year', 'month', 'day', 'hour', 'min', 'sec'} do
  for _, v in ipairs{math.maxinteger, math.mininteger, 2^63, -2^63, 1e308, -1e308, 1/0, -1/0, 0/0, -0.0} do
    local spec = {year = 2000, month = 1, day = 1}
    spec[k] = v
    pcall(d.walltime, spec)
  end
end

-- @@ walltime strings at the extremes | ok |
local d = require('dispatch')
for _, s in ipairs{'9999-12-31 23:59:59', '-9999999999-01-01 00:00:00', '2000-99-99 99:99:99',
                   '99999999999999999999-01-01 00:00:00', '2000-01-01 00:00:99999999999999999999', ''} do
  pcall(d.walltime, s)
end

-- @@ time arithmetic saturates | ok |
local d = require('dispatch')
print(tostring(d.walltime(-1e300) - 1e300), tostring(d.walltime(1e300) + 1e300))
print(tostring(d.now() + math.huge), tostring(d.now() - math.huge), pcall(function() return d.now() + 0/0 end))
print(pcall(function() return d.walltime(math.mininteger) - d.walltime(math.maxinteger), d.now() - d.walltime() end))
print(tostring(d.walltime(2^63)), tostring(d.walltime(-2^63)), pcall(d.walltime, 0/0))

-- @@ time comparisons and arithmetic across kinds | survive |
local d = require('dispatch')
local a, b = d.now() + 1e300, d.walltime(-1e300)
pcall(function() return a < b end) pcall(function() return a - b end) pcall(function() return b - a end)
print(a == b, pcall(function() return a + a end))

-- @@ concurrent_map of math.maxinteger | error: out of range |
require('dispatch').concurrent_map(math.maxinteger, function() end)

-- @@ concurrent_map of 2^34 in chunks of 1 | error: bad argument |
require('dispatch').concurrent_map(2^34, function() end, {chunk = 1})

-- @@ concurrent_map chunk sizes at the extremes | survive |
local d = require('dispatch')
for _, c in ipairs{math.maxinteger, math.mininteger, 0, -1, 2^63, 1/0, 0/0, 1e308} do
  pcall(d.concurrent_map, 10, function(i) return i end, {chunk = c})
end

-- @@ concurrent_perform counts at the extremes | ok |
local d = require('dispatch')
for _, n in ipairs{-1, 0, math.mininteger, -2^63, 0/0, -1/0, -1e308} do pcall(d.concurrent_perform, n, function() end) end

-- @@ semaphores at the extremes | ok |
local d = require('dispatch')
for _, n in ipairs{math.maxinteger, math.mininteger, -1, 2^63, -2^63, 1e308, 1/0, 0/0} do pcall(d.semaphore, n) end
local s = d.semaphore(0)
for _, t in ipairs{-1, 0, -1e308, -1/0, 0/0, -2^63, 1e-300} do pcall(s.wait, s, t) end

-- @@ group and item waits at the extremes | ok |
local d = require('dispatch')
local g, item = d.group(), d.work_item(function() end)
item:perform()
for _, t in ipairs{1e308, 1/0, -1/0, 0/0, math.maxinteger, math.mininteger, 2^63, -0.0} do
  pcall(g.wait, g, t) pcall(item.wait, item, t)
end

-- @@ after at the extremes | survive |
local d = require('dispatch')
local q = d.queue('a')
for _, t in ipairs{1e308, -1e308, 1/0, -1/0, 0/0, math.maxinteger, math.mininteger, 2^63, -2^63} do
  pcall(q.after, q, t, function() end)
  pcall(function() q:after(d.now() + t, function() end) end)
  pcall(function() q:after(d.walltime() + t, function() end) end)
end

-- @@ timers at the extremes | survive |
local d = require('dispatch')
local xs = {1e308, -1e308, 1/0, -1/0, 0/0, math.maxinteger, math.mininteger, 2^63, -2^63, 1e-300}
for _, x in ipairs(xs) do
  for _, k in ipairs{'deadline', 'interval', 'leeway'} do
    local ok, t = pcall(d.source.timer, {[k] = x, handler = function() end})
    if ok then t:resume() pcall(t.schedule, t, {[k] = x}) t:cancel() end
  end
end

-- @@ sleeps at the extremes | ok |
local d = require('dispatch')
for _, t in ipairs{-1, -1e308, -1/0, 0/0, math.mininteger, -2^63, 1e-300} do pcall(d.sleep, t) end

-- @@ channel capacities and timeouts at the extremes | ok |
local d = require('dispatch')
for _, c in ipairs{math.maxinteger, math.mininteger, -1, 0, 2^63, 1/0, 0/0, 1e308} do
  local ok, ch = pcall(d.channel, {capacity = c})
  if ok then for _, t in ipairs{-1, 0/0, -1/0, 1e-300} do pcall(ch.send, ch, 1, t) pcall(ch.receive, ch, t) end end
end

-- @@ workers counts at the extremes | survive |
local d = require('dispatch')
for _, n in ipairs{1e9, math.maxinteger, math.mininteger, -1, 0, 2^63, 1/0, 0/0} do
  local ok, p = pcall(d.workers, {count = n})
  if ok then p:close() end
end

-- @@ data offsets at the extremes | ok |
local d = require('dispatch')
local x = d.data('abcdef') .. 'ghi'
local ns = {math.maxinteger, math.mininteger, 2^63, -2^63, 1e308, -1e308, 0/0, 0, -1, 1}
for _, i in ipairs(ns) do for _, j in ipairs(ns) do pcall(x.sub, x, i, j) pcall(x.bytes, x, i, j) end end

-- @@ switch_interval at the extremes | ok |
local d = require('dispatch')
for _, t in ipairs{-1e308, 1e308, 1/0, -1/0, 0/0, math.maxinteger, -1} do pcall(d.switch_interval, t) end

-- @@ os.date and os.time at the extremes | ok |
for _, t in ipairs{2^62, -2^62, math.maxinteger, math.mininteger} do pcall(os.date, '%c', t) pcall(os.date, '!*t', t) end
pcall(os.time, {year = 2^62, month = 1, day = 1}) pcall(os.time, {year = 2000, month = math.maxinteger, day = 1})

-- @@ string and utf8 counts at the extremes | ok |
pcall(string.rep, 'x', math.maxinteger) pcall(string.rep, 'x', 2^62, 'y') pcall(utf8.char, math.maxinteger)
pcall(utf8.codepoint, 'abc', math.mininteger, math.maxinteger) pcall(utf8.offset, 'abc', math.maxinteger, math.mininteger)
pcall(string.format, '%99999d', 1) pcall(string.pack, 'i17', 1) pcall(string.pack, 'c' .. math.maxinteger, '')
pcall(table.concat, {}, '', math.mininteger, math.maxinteger) pcall(table.unpack, {}, math.mininteger, math.maxinteger)
pcall(string.sub, 'abc', math.mininteger, math.maxinteger) pcall(string.byte, 'abc', math.mininteger, math.maxinteger)

-- ===== Crashes through the debug library (metamethods and __gc of every type) =====

-- @@ metamethods of a monotonic time | ok | nosandbox uses=objects
hammer('now')

-- @@ metamethods of a wall time | ok | nosandbox uses=objects
hammer('walltime')

-- @@ metamethods of a queue | ok | nosandbox uses=objects
hammer('queue')

-- @@ metamethods of a group | ok | nosandbox uses=objects
hammer('group')

-- @@ metamethods of a semaphore | ok | nosandbox uses=objects
hammer('semaphore')

-- @@ metamethods of a work item | ok | nosandbox uses=objects
hammer('work_item')

-- @@ metamethods of a timer source | ok | nosandbox uses=objects
hammer('timer')

-- @@ metamethods of a data_add source | ok | nosandbox uses=objects
hammer('data_add')

-- @@ metamethods of a data object | ok | nosandbox uses=objects
hammer('data')

-- @@ metamethods of a channel | ok | nosandbox uses=objects
hammer('channel')

-- @@ metamethods of an I/O channel | ok | nosandbox uses=objects
hammer('io')

-- @@ metamethods of a task | ok | nosandbox uses=objects
hammer('task')

-- @@ metamethods of a workers pool | ok | nosandbox uses=objects
hammer('pool')

-- @@ metamethods of a job | ok | nosandbox uses=objects
hammer('job')

-- @@ metamethods of a specific key | ok | nosandbox uses=objects
hammer('key')

-- @@ time __add called with numbers | error: bad argument | nosandbox
local d = require('dispatch')
debug.getmetatable(d.now()).__add(1, 2)

-- @@ numbers given a time's metatable | survive | nosandbox
local d = require('dispatch')
debug.setmetatable(1, debug.getmetatable(d.now()))
pcall(function() return 1 + 2 end) pcall(tostring, 1) pcall(function() return (1) < 2 end)
print(pcall(function() return d.now() - 5 end))

-- @@ tables given every type's metatable | ok | nosandbox uses=objects
for name, o in pairs(objects) do
  local t = setmetatable({}, debug.getmetatable(o))
  pcall(tostring, t) pcall(function() return #t end) pcall(function() return t .. t end)
  pcall(function() return t == t, t < t end)
  for _, m in ipairs{'async', 'sync', 'wait', 'signal', 'cancel', 'resume', 'suspend', 'bytes', 'send', 'receive', 'submit', 'enter', 'perform'} do
    pcall(function() return t[m](t, function() end) end)
  end
end
cleanup()
print('held')

-- @@ __gc by hand then the object in use | ok | nosandbox
local d = require('dispatch')
local q, s, g = d.queue('x'), d.semaphore(0), d.group()
for _, o in ipairs{q, s, g, d.now(), d.walltime()} do
  local gc = debug.getmetatable(o).__gc
  if gc then gc(o) gc(o) gc(d.now()) gc(io.stdout) end
end
q:sync(function() end) s:signal() s:wait() g:enter() g:leave() g:wait()
collectgarbage()

-- @@ a hook that blocks on syncs | survive | nosandbox
local d = require('dispatch')
debug.sethook(function() d.global():sync(function() end) end, '', 10)
for i = 1, 20000 do local _ = i * 2 end
debug.sethook()
