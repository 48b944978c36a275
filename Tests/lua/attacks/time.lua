-- Attacks on the time limit: C functions that run long, code Lua runs with hooks off, deep
-- nesting, waits that never end, Swift loops in bindings.
-- Part of the attack suite (AttackSuiteTests); the format is described in crashes.lua.

-- ===== C functions that run long =====

-- @@ find backtracking | time |
string.find(('a'):rep(40), ('a*'):rep(20) .. 'b')

-- @@ match backtracking | time |
string.match(('a'):rep(40), ('a*'):rep(20) .. 'b')

-- @@ gmatch backtracking | time |
for _ in string.gmatch(('a'):rep(40), ('a*'):rep(20) .. 'b') do end

-- @@ gsub backtracking | time |
string.gsub(('a'):rep(40), ('a*'):rep(20) .. 'b', '')

-- @@ find quadratic | time |
(('a'):rep(1e6)):find('.-b')

-- @@ plain find quadratic | time |
(('a'):rep(1e6)):find(('a'):rep(5e5) .. 'b', 1, true)

-- @@ frontier and class loops | time |
local s = ('a'):rep(2.5e7)
while true do s:find('%f[%z]') s:gsub('[%w%s]', '') end

-- @@ string.rep of nothing | ok |
print(#string.rep('', 2^62), #string.rep('', 2^62, ''))

-- @@ string.rep long | time |
while true do local _ = string.rep('ab', 1e7) end

-- @@ table.move over a huge range | time |
table.move({}, 1, math.maxinteger - 1, 1)

-- @@ table.concat over a huge range | time |
table.concat(setmetatable({}, {__index = function() return '' end}), '', 1, 2^40)

-- @@ table.concat of a big table | time |
local t = {}
for i = 1, 1e6 do t[i] = 'x' end
while true do table.concat(t) end

-- @@ table.sort of two billion | time |
table.sort(setmetatable({}, {__len = function() return 2^31 - 2 end, __index = function(_, i) return i % 7 end, __newindex = function() end}))

-- @@ table.unpack many | time |
local t = setmetatable({}, {__index = function() return 1 end})
while true do table.unpack(t, 1, 9e5) end

-- @@ table.remove and insert past the end | time |
table.insert(setmetatable({}, {__len = function() return math.maxinteger - 1 end}), 1, 0)

-- @@ string.format of a long format | time |
local t = {}
for i = 1, 9e5 do t[i] = i * 1.1 end
local f = ('%.14g'):rep(9e5)
while true do string.format(f, table.unpack(t)) end

-- @@ string.format of many arguments | time |
local args = {}
for i = 1, 2e5 do args[i] = i end
local f = ('%d%5.1f%s%q'):rep(5e4)
while true do string.format(f, table.unpack(args)) end

-- @@ string.pack of a long format | time |
local f = (' '):rep(2e7)
while true do string.pack(f) end

-- @@ string.unpack of a long format | time |
local f = ('!'):rep(2e7)
while true do string.unpack(f, '') end

-- @@ utf8.len of a long string | time |
local s = ('\u{10FFFF}'):rep(5e6)
while true do utf8.len(s) end

-- @@ load of a long chunk | time |
local s = ('local a = 1 '):rep(1e6)
while true do load(s) end

-- ===== Message handlers, __close, __gc, __tostring under the limit =====

-- @@ xpcall handler | time |
xpcall(function() error('x') end, function(m) while true do end end)

-- @@ __close | time |
local x <close> = setmetatable({}, {__close = function() while true do end end}) error('y')

-- @@ __gc | time |
setmetatable({}, {__gc = function() while true do end end}) collectgarbage()

-- A finalizer runs with hooks off, and Lua turns its error into a warning and goes on with the
-- next: the first one the end reaches leaves the collection (control/finalizers.c). Each of
-- the hundred took a signal of its own before (0.25 s past the bound beside CI's other runs),
-- and the chain ran to the backstop.
-- @@ many __gc | time |
for i = 1, 100 do setmetatable({}, {__gc = function() while true do end end}) end collectgarbage()

-- @@ __gc that makes garbage with finalizers | time |
local function mk() setmetatable({}, {__gc = function() mk() mk() end}) end
mk()
while true do collectgarbage() end

-- @@ error's __tostring | time |
error(setmetatable({}, {__tostring = function() while true do end end}))

-- @@ pcall that catches everything | time |
while true do pcall(function() while true do end end) end

-- @@ coroutine.resume that catches everything | time |
while true do coroutine.resume(coroutine.create(function() while true do end end)) end

-- @@ coroutine.close of a looping __close | time |
local co = coroutine.create(function() local x <close> = setmetatable({}, {__close = function() while true do end end}) coroutine.yield() end)
coroutine.resume(co)
coroutine.close(co)

-- @@ error handler of an async block | time |
local d = require('dispatch')
d.set_error_handler(function() while true do end end)
d.global():async(function() error('x') end)

-- @@ debug hook | time | nosandbox
debug.sethook(function() while true do end end, 'l')
local x = 1

-- ===== Deep nesting =====

-- @@ nested syncs past 256 states | time |
local d = require('dispatch')
local function g(n) if n == 0 then while true do end end d.global():sync(function() g(n - 1) end) end
g(190)

-- @@ nested coroutines and syncs | time |
local d = require('dispatch')
local function g(n)
  if n == 0 then while true do end end
  coroutine.wrap(function() d.global():sync(function() g(n - 1) end) end)()
end
g(150)

-- @@ nested coroutines | time |
local function g(n) if n == 0 then while true do end end coroutine.wrap(g)(n - 1) end
g(180)

-- ===== Waits and loops that never end, in every kind of block =====

-- @@ semaphore wait for ever | time |
require('dispatch').semaphore(0):wait()

-- @@ job that never ends | time |
local d = require('dispatch')
d.workers{count = 1}:submit(function() while true do end end):wait()

-- @@ timer handlers that never end | time |
local d = require('dispatch')
for i = 1, 4 do d.source.timer{deadline = 0, interval = 0.001, handler = function() while true do end end}:resume() end

-- @@ concurrent_map bodies that never end | time |
require('dispatch').concurrent_map(4, function() while true do end end)

-- ===== Swift loops in bindings =====

-- @@ concurrent_map tasks | limit |
require('dispatch').concurrent_map(5e6, function() end, {chunk = 1})

-- @@ concurrent_map of 2^23 results | time |
local d = require('dispatch')
while true do d.concurrent_map(2^23 - 1, function() end) end

-- @@ regions of a doubled data object | time |
local d = require('dispatch')
local x = d.data('ab')
for i = 1, 14 do x = x .. x end
while true do for _ in x:regions() do end end

-- @@ equality and bytes of doubled data | time |
local d = require('dispatch')
local x = d.data('ab')
for i = 1, 18 do x = x .. x end
local y = '' .. x
while true do local _ = (x == y) and #x:bytes() and x:sub(3, -3) end
