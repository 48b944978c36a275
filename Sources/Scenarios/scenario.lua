-- The `scenario` module of the bundled scenario scripts (scripts/scenarios), loaded with one
-- argument: the host's functions (ScenarioModule.swift under `luadispatch scenarios exec`,
-- Tests/lua/scenario.lua under stock lua5.4).
local host = ...
local M = {}
M.scale = tonumber(os.getenv("LUADISPATCH_DELAY_SCALE")) or 1
M.checking = os.getenv("LUADISPATCH_SCENARIO_CHECK") == "1"
M.size = math.tointeger(tonumber(os.getenv("LUADISPATCH_SCENARIO_SIZE"))) or 64 * 1024 * 1024
-- A tutorial delay, scaled for tests.
function M.delay(seconds) return seconds * M.scale end
-- Asserts an invariant; a failure is reported and makes the process exit 1 at the end.
-- Every call counts: the runner fails a run that makes fewer or more checks than the
-- script declares (`-- expect: N checks`). Blocks that run at the same time may check
-- at the same time: the host keeps the counts, this function keeps no state.
function M.check(cond, what)
  host.checked(cond and true or false)
  if cond then
    if M.checking then print("ok: " .. what) end
  else
    print("FAILED: " .. what)
  end
  return cond
end
function M.data(name) return host.data_dir() .. "/" .. name end

-- Fixtures for the file scenarios. A part file of `size` bytes: a pseudo-random block
-- repeated, each 1 MiB chunk stamped with its part and chunk number.
local CHUNK = 1 << 20
function M.make_part(path, size, part)
  local x, words = part * 0x9E3779B97F4A7C15 + 1, {}
  for i = 1, 8192 do
    x = x * 6364136223846793005 + 1442695040888963407
    words[i] = string.pack("<i8", x)
  end
  local big = table.concat(words):rep(CHUNK // 65536)
  local f = assert(io.open(path, "wb"))
  local written, k = 0, 0
  while written < size do
    local n = math.min(CHUNK, size - written)
    local stamp = string.format("[part %d chunk %08d]", part, k)
    if n <= #stamp then f:write(stamp:sub(1, n)) else f:write(stamp, big:sub(#stamp + 1, n)) end
    written, k = written + n, k + 1
  end
  f:close()
end

-- 64-bit FNV-1a over the files' bytes taken as one stream (in 8-byte words), and the size.
function M.checksum(paths)
  local P, h, total, rest = 0x100000001b3, 0xcbf29ce484222325, 0, ""
  local unpack = string.unpack
  for _, path in ipairs(paths) do
    local f = assert(io.open(path, "rb"))
    while true do
      local s = f:read(CHUNK)
      if not s then break end
      total = total + #s
      if #rest > 0 then s = rest .. s end
      local n = #s - #s % 64
      for pos = 1, n, 64 do
        local a, b, c, d, e, g, i, j = unpack("<i8i8i8i8i8i8i8i8", s, pos)
        h = (h ~ a) * P; h = (h ~ b) * P; h = (h ~ c) * P; h = (h ~ d) * P
        h = (h ~ e) * P; h = (h ~ g) * P; h = (h ~ i) * P; h = (h ~ j) * P
      end
      rest = s:sub(n + 1)
    end
    f:close()
  end
  for k = 1, #rest do h = (h ~ rest:byte(k)) * P end
  return h, total
end
-- The process's memory in bytes, from /proc/self/status: peak (VmHWM, the peak resident
-- set since the start or the last reset_peak_memory), rss (VmRSS), anon (RssAnon:
-- memory the process allocated) and file (RssFile: file pages mapped in, which belong to
-- the page cache and which the kernel may drop at any time).
M.memory = host.memory
-- Makes the peak start again from the current resident set; false where Linux refuses.
M.reset_peak_memory = host.reset_peak_memory
M.tmpdir = host.tmpdir
M.rmtree = host.rmtree
M.http_base = host.http_base
return M
