-- Attacks on the memory limit: memory held outside Lua, and Lua's own.
-- Part of the attack suite (AttackSuiteTests); the format is described in crashes.lua.

-- ===== Memory overruns through Swift-side copies =====

-- @@ labels from current_label | memory |
local d = require('dispatch')
local q, t = d.queue(('x'):rep(8 << 20)), {}
q:sync(function() for i = 1, 50 do t[i] = d.current_label() end end)

-- @@ tostring of a queue with a big label | memory |
local d = require('dispatch')
local q, t = d.queue(('x'):rep(8 << 20)), {}
for i = 1, 50 do t[i] = tostring(q) end

-- @@ queues named by one big string | memory |
local d = require('dispatch')
local s, t = ('x'):rep(20 << 20), {}
for i = 1, 10 do t[i] = d.queue(s) end

-- @@ specific keys named by a big string | memory |
local d = require('dispatch')
local s, t = ('k'):rep(8 << 20), {}
for i = 1, 50 do t[i] = d.specific_key(s) end

-- @@ errors re-raised by task wait | memory |
local d = require('dispatch')
local big, t = ('e'):rep(8 << 20), {}
for i = 1, 50 do
  local task = d.task(function() error(big, 0) end)
  local ok, e = pcall(task.wait, task)
  if e == 'not enough memory' then error(e) end
  t[i] = e
end

-- @@ errors re-raised by job wait | memory |
local d = require('dispatch')
local pool, big, t = d.workers{count = 1}, ('e'):rep(8 << 20), {}
for i = 1, 50 do
  local j = pool:submit(function(s) error(s, 0) end, big)
  local ok, e = pcall(j.wait, j)
  if e == 'not enough memory' then error(e) end
  t[i] = e
end

-- @@ data concatenated with itself | memory |
local d = require('dispatch')
local x = d.data('ab')
for i = 1, 23 do x = x .. x end

-- @@ data objects of a big string | memory |
local d = require('dispatch')
local s, t = ('d'):rep(8 << 20), {}
for i = 1, 50 do t[i] = d.data(s) end

-- @@ bytes of a data object | memory |
local d = require('dispatch')
local x, t = d.data(('b'):rep(8 << 20)), {}
for i = 1, 50 do t[i] = x:bytes() end

-- @@ regions of a data object doubled 18 times | memory |
local d = require('dispatch')
local x = d.data('ab')
for i = 1, 18 do x = x .. x end
for _ in x:regions() do end

-- @@ tasks on a suspended queue | memory |
local d = require('dispatch')
local q, t, f = d.queue('held'), {}, function() end
q:suspend()
for i = 1, 1e6 do t[i] = d.task(f, q) end

-- @@ channel messages | memory |
local d = require('dispatch')
local ch, s = d.channel(), ('m'):rep(1 << 20)
for i = 1, 2000 do ch:send(s) end

-- @@ queued job arguments | memory |
local d = require('dispatch')
local pool, s, t = d.workers{count = 1}, ('a'):rep(1 << 20), {}
pool:submit(function() local x = 0 while x >= 0 do x = x + 1 end end)
for i = 1, 2000 do t[i] = pool:submit(function() end, s) end

-- @@ a million queues | memory |
local d = require('dispatch')
local t = {}
for i = 1, 1e6 do t[i] = d.queue() end

-- @@ 300,000 timers | memory |
local d = require('dispatch')
local f = function() end
for i = 1, 300000 do d.source.timer{deadline = 1000, handler = f}:resume() end

-- @@ 3,000,000 blocks on a suspended queue | memory |
local d = require('dispatch')
local q, f = d.queue('held'), function() end
q:suspend()
for i = 1, 3e6 do q:async(f) end

-- @@ a million work items, groups and semaphores | memory |
local d = require('dispatch')
local t, f = {}, function() end
for i = 1, 1e6 do t[#t + 1] = d.work_item(f) t[#t + 1] = d.group() t[#t + 1] = d.semaphore(0) end

-- @@ a million channels | memory |
local d = require('dispatch')
local t = {}
for i = 1, 1e6 do t[i] = d.channel() end

-- @@ concurrent_map results | memory |
local d = require('dispatch')
local r = d.concurrent_map(100, function() return ('c'):rep(1 << 20) end, {chunk = 1})

-- @@ concurrent_map results kept | memory |
local d = require('dispatch')
local t = {}
for i = 1, 20 do t[i] = d.concurrent_map(4, function() return ('c'):rep(4 << 20) end) end

-- @@ concurrent_map copies of a big upvalue | memory |
local d = require('dispatch')
local s, t = ('u'):rep(2 << 20), {}
for i = 1, 80 do t[i] = d.concurrent_map(8, function(i) return s end, {chunk = 1}) end

-- @@ DispatchIO reads of /dev/zero kept | memory | nosandbox
local d = require('dispatch')
local ch, q, t = d.io{path = '/dev/zero', mode = 'r'}, d.queue('io'), {}
-- Past the limit the read stops (errno 12, ENOMEM, at its end); the script goes on keeping.
ch:read(0, math.huge, q, function(done, data, errno)
  t[#t + 1] = data
  if done then ch:close() t[#t + 1] = ('x'):rep(8 << 20) end
end)

-- @@ one-shot DispatchIO reads of /dev/zero kept | memory | nosandbox
local d = require('dispatch')
local fd, q, t = d.fd.open('/dev/zero', 'r'), d.queue('io'), {}
local function more(data) t[#t + 1] = data d.io.read(fd, 1 << 20, q, more) end
d.io.read(fd, 1 << 20, q, more)

-- @@ one-shot DispatchIO read of a 256 MiB file | error: errno 12 | nosandbox
local d = require('dispatch')
local path = os.tmpname()
local f = io.open(path, 'w') f:seek('set', (1 << 28) - 1) f:write('x') f:close()
local fd = d.fd.open(path, 'r')
os.remove(path)
d.io.read(fd, 1 << 28, d.queue('io'), function(data, errno) d.fd.close(fd) error('errno ' .. errno) end)

-- @@ DispatchIO water marks past the limit | ok | nosandbox
local d = require('dispatch')
local ch = d.io{path = '/dev/zero', mode = 'r'}
ch:set_limit{low = 1 << 30, high = 1 << 30}
ch:read(0, 1 << 26, d.queue('io'), function(done, data) if done then ch:close() end end)

-- @@ string.rep of a terabyte | error: too large |
local _ = string.rep('x', 2^40)

-- @@ string.rep of a gigabyte | memory |
local _ = string.rep('x', 2^30)

-- @@ gsub that doubles | memory |
local s = ('x'):rep(1 << 20)
while true do s = s:gsub('x+', '%0%0') end

-- @@ string.format that grows | memory |
local s = ('f'):rep(1 << 20)
while true do s = string.format('%s%s', s, s) end
