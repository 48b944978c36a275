-- The check functions of swift-corelibs-libdispatch's test harness (tests/bsdtests.c and
-- tests/dispatch_test.c), for the Lua ports in this folder. Each port loads it with
--
--     local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")
--
-- and calls the checks by their C names without the `test_` prefix (`T.long`, `T.sizet_less_than`,
-- `T.ptr_notnull`, ...). A check prints `[PASS] desc` or `[FAIL] desc (file:line): actual ...,
-- expected ...`; `T.stop()` prints `[SUMMARY] name: N checks, N passed, N failed` and ends the
-- process, with status 1 if any check failed or any block raised an uncaught error (as
-- bsdtests' test_stop exits with the failure code). A port that never reaches `T.stop()` prints no
-- summary, which the suite that runs these files (Tests/CLITests/Reliability/DispatchPortsTests.swift) counts
-- as a failure, as it does a number of checks other than the one the file's header declares.
--
-- Checks may come from blocks that run at the same time: the counters are kept under a
-- semaphore.
local dispatch = require("dispatch")

local T = {}
local name = "?"
local passed, failed, errors = 0, 0, 0
local guard = dispatch.semaphore(1)

local here = debug.getinfo(1, "S").source
local function where()
    -- The port's line that called the check: the first Lua frame outside this file.
    for level = 2, 20 do
        local info = debug.getinfo(level, "Sl")
        if not info then break end
        if info.source ~= here and info.what ~= "C" then
            return string.format("%s:%d", info.short_src, info.currentline)
        end
    end
    return "?"
end

local function show(v)
    if type(v) == "number" and math.type(v) == "float" then return string.format("%.6g", v) end
    return tostring(v)
end

local function record(ok, desc, actual, expected)
    guard:wait()
    if ok then passed = passed + 1 else failed = failed + 1 end
    guard:signal()
    if ok then
        print(string.format("[PASS] %s (%s)", desc, show(actual)))
    else
        print(string.format("[FAIL] %s (%s): actual %s, expected %s", desc, where(), show(actual), expected))
    end
    io.stdout:flush()
    return ok
end

function T.start(desc)
    name = desc
    print("[TEST] " .. desc)
    dispatch.set_error_handler(function(message, traceback, label)
        guard:wait()
        errors = errors + 1
        guard:signal()
        print(string.format("[FAIL] uncaught error in a block on queue '%s': %s\n%s", tostring(label), message, traceback))
        io.stdout:flush()
    end)
end

-- Equality of numbers, booleans, strings (test_long, test_sizet, test_int32, ...).
function T.long(desc, actual, expected)
    return record(actual == expected, desc, actual, show(expected))
end
T.sizet, T.int32, T.uint32, T.int64, T.uint64 = T.long, T.long, T.long, T.long, T.long

function T.long_less_than(desc, actual, max)
    return record(type(actual) == "number" and actual < max, desc, actual, "< " .. show(max))
end
function T.long_less_than_or_equal(desc, actual, max)
    return record(type(actual) == "number" and actual <= max, desc, actual, "<= " .. show(max))
end
function T.long_greater_than_or_equal(desc, actual, min)
    return record(type(actual) == "number" and actual >= min, desc, actual, ">= " .. show(min))
end
T.sizet_less_than, T.sizet_less_than_or_equal = T.long_less_than, T.long_less_than_or_equal
T.double_less_than, T.double_less_than_or_equal = T.long_less_than, T.long_less_than_or_equal

-- Pointers become values: notnull is "not nil", ptr is identity (rawequal).
function T.ptr_notnull(desc, v)
    return record(v ~= nil, desc, v, "non-nil")
end
function T.ptr_null(desc, v)
    return record(v == nil, desc, v, "nil")
end
function T.ptr(desc, actual, expected)
    return record(rawequal(actual, expected), desc, actual, show(expected))
end

-- errno values (numbers, or names as dispatch.fd.* return them), compared and shown by name
-- (0 is "OK").
local function errname(e)
    if type(e) == "number" then return dispatch.errno_name(e) end
    return e or "OK"
end
function T.errno(desc, actual, expected)
    return record(errname(actual) == errname(expected), desc, errname(actual), errname(expected))
end

function T.skip(desc)
    print("[SKIP] " .. desc)
end

-- dispatch_test.h's test_group_wait: a group that does not empty in 25 s fails the test.
function T.group_wait(g, timeout)
    if not g:wait(timeout or 25) then
        T.long("group wait timed out", 1, 0)
        T.stop()
    end
end

function T.counts()
    guard:wait()
    local p, f, e = passed, failed, errors
    guard:signal()
    return p, f, e
end

-- test_stop: the summary, then the process ends (pending output flushed).
function T.stop()
    local p, f, e = T.counts()
    print(string.format("[SUMMARY] %s: %d checks, %d passed, %d failed, %d uncaught errors", name, p + f, p, f, e))
    io.stdout:flush()
    dispatch.exit((f == 0 and e == 0) and 0 or 1)
end

-- dispatch_set_finalizer_f: a Lua object has no finalizer callback, but one that Dispatch and
-- the runtime have let go is collected. `T.watch(obj)` keeps a weak reference;
-- `T.finalized(desc, watch)` collects garbage until the object is gone (up to 5 s) and checks
-- that it went. The caller must hold no reference to it any more.
function T.watch(obj)
    return setmetatable({obj}, {__mode = "v"})
end
function T.finalized(desc, watch)
    local deadline = dispatch.now() + 5
    repeat
        collectgarbage()
        collectgarbage()
        if watch[1] == nil then break end
        dispatch.sleep(0.005)
    until dispatch.now() > deadline
    return record(watch[1] == nil, desc, watch[1] == nil and "collected" or tostring(watch[1]), "collected")
end

-- An integer that blocks running at the same time update atomically (the C tests'
-- OSAtomicIncrement32 and __sync_add_and_fetch): `c:add(n)` returns the new value.
function T.counter(initial)
    local value, s = initial or 0, dispatch.semaphore(1)
    return {
        add = function(_, n)
            s:wait()
            value = value + (n or 1)
            local v = value
            s:signal()
            return v
        end,
        get = function()
            s:wait()
            local v = value
            s:signal()
            return v
        end,
        set = function(_, v)
            s:wait()
            value = v
            s:signal()
        end,
    }
end

-- A test file of `size` random bytes (dispatch_test_get_large_file: 2 MiB from /dev/urandom).
function T.large_file(size)
    size = size or 2 * 1024 * 1024
    local path = os.tmpname()
    local input = assert(io.open("/dev/urandom", "rb"))
    local output = assert(io.open(path, "wb"))
    output:write(input:read(size))
    input:close()
    output:close()
    return path
end

-- The number of online processors (sysconf(_SC_NPROCESSORS_ONLN)).
function T.active_cpus()
    local p = io.popen("nproc 2>/dev/null")
    local n = p and tonumber(p:read("l"))
    if p then p:close() end
    return n or 2
end

return T
