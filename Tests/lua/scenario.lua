-- Runs one bundled scenario (scripts/scenarios/*.lua) under stock lua5.4 with the module, as
-- `luadispatch scenarios exec` does: the `scenario` module (its Lua part is
-- Sources/Scenarios/scenario.lua, the host functions are written here in plain Lua), the
-- script, then `dispatch.run()`. Passes (exit 0, "scenario: pass") only if every
-- check held, the script made exactly the checks its header declares, and no work was left.
--
--   LUADISPATCH_DELAY_SCALE=0.05 lua5.4 -e 'package.cpath="DIR/?.so;"..package.cpath' \
--     Tests/lua/scenario.lua scripts/scenarios/3.8-barrier-on-concurrent-queue.lua
local script = assert(arg[1], "usage: scenario.lua SCRIPT")
-- The repository: where this runner is (Tests/lua/scenario.lua).
local root = (arg[0]:match("^(.*)/Tests/lua/[^/]+$")) or "."
local dispatch = require("dispatch")

local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- Scripts check from blocks that may run at the same time: the counts change on a serial queue.
local checks, failed, ledger = 0, 0, dispatch.queue("scenario.lua ledger")
-- Files through LuaFileSystem (a dependency of lua-busted), not through a shell: a child process
-- would inherit the sanitizer runtime the module tests preload into lua5.4.
local lfs = require("lfs")
local function rmtree(path)
  if lfs.symlinkattributes(path, "mode") == "directory" then
    for entry in lfs.dir(path) do
      if entry ~= "." and entry ~= ".." then rmtree(path .. "/" .. entry) end
    end
    lfs.rmdir(path)
  else
    os.remove(path)
  end
end
local dataDir = os.getenv("LUADISPATCH_SCENARIO_DATA") or (script:match("^(.*)/") or ".") .. "/data"
local host = {
  checked = function(ok)
    ledger:sync(function()
      checks = checks + 1
      if not ok then failed = failed + 1 end
    end)
  end,
  memory = function()
    local names = { VmHWM = "peak", VmRSS = "rss", RssAnon = "anon", RssFile = "file" }
    local m = {}
    for line in io.lines("/proc/self/status") do
      local key, kB = line:match("^(%w+):%s+(%d+)")
      if key and names[key] then m[names[key]] = tonumber(kB) * 1024 end
    end
    return m
  end,
  reset_peak_memory = function()
    local f = io.open("/proc/self/clear_refs", "w")
    if not f then return false end
    local ok = f:write("5")
    f:close()
    return ok and true or false
  end,
  data_dir = function() return dataDir end,
  tmpdir = function()
    local path = os.tmpname()   -- a new file, made by mkstemp: its name is ours
    os.remove(path)
    assert(lfs.mkdir(path))
    return path
  end,
  rmtree = rmtree,
  http_base = function() error("scenario.lua: no HTTP fixture server under stock lua5.4") end,
}
package.preload.scenario = function() return assert(loadfile(root .. "/Sources/Scenarios/scenario.lua"))(host) end

local expected = tonumber(slurp(script):match("%-%- expect: (%d+) checks?"))
dofile(script)
local left = dispatch.run()
local verdict = failed == 0 and checks == expected and not left
print(("scenario: %s (%d of %s checks made, %d failed%s)"):format(verdict and "pass" or "FAIL",
  checks, tostring(expected), failed, left and ", work left" or ""))
os.exit(verdict and 0 or 1, true)   -- closing the state reports uncaught errors (status 1)
