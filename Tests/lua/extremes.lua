-- The numeric-extremes fuzzer (run by Tests/CLITests/ExtremesFuzzTests.swift).
--
--   luadispatch [--sandbox] extremes.lua list            prints the callables, one a line
--   luadispatch [--sandbox] extremes.lua run FIRST LAST  fuzzes callables FIRST..LAST of the list
--
-- The callables are found at run time: the module's functions, those of its tables
-- (dispatch.source, .net, .fd, .io, ...), the methods of every object type (through a live
-- object's metatable __index) and, where the debug library is there, every metamethod. Each is
-- called with every argument position given each extreme value, each other object type and,
-- where it takes a table, an options table with each numeric option set to each numeric
-- extreme; the positions before it get plausible values (found by trying candidates until the
-- error no longer blames that position). Every call is protected by pcall; the run ends with a
-- raised "FUZZ-DONE" error (an error ends the script whatever work is left, such as a suspended
-- queue's blocks, which the fuzzing leaves behind on purpose).
local d = require("dispatch")
local mode, first, last = ...
local sandboxed = d.fd == nil
-- Each call is named before it is made: the last name printed is the call that crashed.
local say = io and function(s) io.stderr:write(s, "\n") end or print

local function resuming(...)
    -- The function value: calls its first argument when that is a function (await's resume),
    -- so that no call waits for it forever.
    local r = ...
    if type(r) == "function" then pcall(r) end
end

-- Fresh objects of every type, for each callable: a call may change an object (suspend,
-- close, cancel), and no call may wait on it forever (a performed item, a finished task and
-- job, a closed channel, a semaphore with a large count, an empty group).
local function objects()
    local o = {}
    o.queue = d.queue("fuzz")
    o.group = d.group()
    o.semaphore = d.semaphore(2 ^ 31 - 1)
    o.work_item = d.work_item(resuming)
    o.work_item:perform()
    o.specific_key = d.specific_key("k")
    o.once = d.once(resuming)
    o.once()
    o.time = d.now()
    o.walltime = d.walltime()
    o.source = d.source.timer { handler = resuming }
    o.data = d.data("abc")
    o.task = d.task(resuming)
    o.task:wait()
    o.pool = d.workers { count = 1 }
    o.job = o.pool:submit(resuming)
    o.job:wait()
    o.channel = d.channel()
    o.channel:close()
    if not sandboxed then
        local r, w = d.fd.pipe()
        o.io = d.io { fd = r }
    end
    return o
end

local big = string.rep("x", 1 << 20)
local numbers = {
    { "maxinteger", math.maxinteger }, { "mininteger", math.mininteger }, { "2^53", 2 ^ 53 },
    { "2^63", 2 ^ 63 }, { "-2^63", -2 ^ 63 }, { "1e308", 1e308 }, { "-1e308", -1e308 },
    { "inf", math.huge }, { "-inf", -math.huge }, { "nan", 0 / 0 }, { "-0.0", -0.0 }, { "0", 0 }, { "-1", -1 },
}
local others = { { "1MiB", big }, { '""', "" }, { "table", {} }, { "function", resuming }, { "nil", nil }, { "true", true } }
-- Options that take numbers (a date's other fields set, so that the one fuzzed is checked).
local optionKeys = { "backlog", "capacity", "chunk", "count", "deadline", "fd", "high", "low", "interval",
    "leeway", "pid", "port", "signal", "permissions", "year", "month", "day", "hour", "min", "sec" }
local dateKeys = { year = true, month = true, day = true, hour = true, min = true, sec = true }
local candidates = { 0, "x", resuming, {}, true, 0.5 }

-- What is not called, and why.
local function skipped(name, args, n)
    if name == "exit" then return true end                       -- ends the process
    if name == "run" then return true end                        -- serves the main queue until the fuzz's live objects end
    if name == "sleep" then                                      -- sleeps as long as asked
        return type(args[1]) ~= "number" or args[1] > 0.01 or args[1] ~= args[1]
    end
    if name == "concurrent_perform" then                         -- runs fn as many times as asked
        return math.type(args[1]) ~= "integer" and not (type(args[1]) == "number" and args[1] == math.floor(args[1]))
            or type(args[1]) == "number" and args[1] > 1000
    end
    return false
end

local function callables()
    local list = {}
    local names = {}
    for k, v in pairs(d) do names[#names + 1] = k end
    table.sort(names)
    for _, k in ipairs(names) do
        local v = d[k]
        if type(v) == "function" then list[#list + 1] = { name = k, label = "dispatch." .. k, fn = v }
        elseif type(v) == "table" then
            local sub = {}
            for k2, v2 in pairs(v) do if type(v2) == "function" then sub[#sub + 1] = k2 end end
            table.sort(sub)
            for _, k2 in ipairs(sub) do
                list[#list + 1] = { name = k2, label = "dispatch." .. k .. "." .. k2, fn = v[k2] }
            end
            if getmetatable(v) and not sandboxed and debug.getmetatable(v).__call then
                list[#list + 1] = { name = k, label = "dispatch." .. k .. "()", fn = function(...) return v(...) end }
            end
        end
    end
    local o = objects()
    local kinds = {}
    for k in pairs(o) do kinds[#kinds + 1] = k end
    table.sort(kinds)
    for _, kind in ipairs(kinds) do
        local obj = o[kind]
        local mt = not sandboxed and debug.getmetatable(obj)
        local methods = {}
        local index = mt and mt.__index
        -- A type with fields has an __index function whose first upvalue is the methods table.
        if type(index) == "function" then index = select(2, debug.getupvalue(index, 1)) end
        if type(index) == "table" then
            for k, v in pairs(index) do if type(v) == "function" then methods[#methods + 1] = k end end
        end
        table.sort(methods)
        for _, m in ipairs(methods) do
            list[#list + 1] = { name = m, label = kind .. ":" .. m, kind = kind, method = m }
        end
        if mt then
            local metas = {}
            for k, v in pairs(mt) do
                if type(k) == "string" and k:sub(1, 2) == "__" and type(v) == "function" then metas[#metas + 1] = k end
            end
            table.sort(metas)
            for _, m in ipairs(metas) do
                list[#list + 1] = { name = m, label = kind .. "." .. m, kind = kind, meta = m }
            end
        end
    end
    return list
end

local list = callables()
if mode == "list" then
    for i, c in ipairs(list) do print(i, c.label) end
    error("FUZZ-DONE listed " .. #list, 0)
end

local calls, skips = 0, 0
local function call(c, f, args, n)
    if skipped(c.name, args, n) then
        skips = skips + 1
        return true
    end
    calls = calls + 1
    return pcall(f, table.unpack(args, 1, n))
end

local function fuzz(c)
    local o = objects()
    local f
    if c.method then
        local obj = o[c.kind]
        f = function(...) return obj[c.method](...) end
    elseif c.meta then
        f = debug.getmetatable(o[c.kind])[c.meta]
    else
        f = c.fn
    end
    local values = {}
    for _, v in ipairs(numbers) do values[#values + 1] = v end
    for _, v in ipairs(others) do values[#values + 1] = v end
    local kinds = {}
    for k in pairs(o) do kinds[#kinds + 1] = k end
    table.sort(kinds)
    for _, k in ipairs(kinds) do values[#values + 1] = { k, o[k] } end
    -- Plausible values for each position: the first candidate the error does not blame.
    local plausible = {}
    if c.method or c.meta then plausible[1] = o[c.kind] end
    for p = 1, 5 do
        if plausible[p] == nil then
            for _, cand in ipairs(candidates) do
                local args = table.move(plausible, 1, p - 1, 1, {})
                args[p] = cand
                local ok, e = call(c, f, args, p)
                if ok or not tostring(e):find("#" .. p .. " ", 1, true) then
                    plausible[p] = cand
                    break
                end
            end
        end
    end
    -- Each position gets each value, with the positions before it plausible and none after
    -- it, then with every other position plausible.
    local function try(p, value, shown)
        for _, n in ipairs { p, 5 } do
            if n == p or plausible[n] ~= nil then
                local args = table.move(plausible, 1, n, 1, {})
                args[p] = value
                say(c.label .. " #" .. p .. "/" .. n .. " " .. shown)
                call(c, f, args, n)
            end
        end
    end
    for p = 1, 5 do
        for _, v in ipairs(values) do try(p, v[2], v[1]) end
        -- Options tables, where the position takes a table.
        local args = table.move(plausible, 1, p - 1, 1, {})
        args[p] = {}
        local ok, e = call(c, f, args, p)
        if ok or not tostring(e):find("#" .. p .. " ", 1, true) then
            for _, key in ipairs(optionKeys) do
                for _, v in ipairs(numbers) do
                    local t = dateKeys[key] and { year = 2000, month = 1, day = 1, hour = 0, min = 0, sec = 0 } or {}
                    t[key] = v[2]
                    try(p, t, "{" .. key .. " = " .. v[1] .. "}")
                end
            end
        end
    end
end

for i = tonumber(first), tonumber(last) do
    if list[i] then fuzz(list[i]) end
end
error(string.format("FUZZ-DONE %d calls %d skipped", calls, skips), 0)
