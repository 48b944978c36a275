-- Checks that docs/api.md (the one reference of the module), the editor definitions in
-- types/dispatch.lua and, when `require "dispatch"` works, the module itself name the same
-- functions and methods. Exits 1 and lists every difference otherwise.
--
--   lua5.4 Tests/lua/check-types.lua [ROOT]                      docs and definitions
--   luadispatch run Tests/lua/check-types.lua [ROOT]             ... and the module
--   lua5.4 -e 'package.cpath="DIR/?.so;"..package.cpath' Tests/lua/check-types.lua [ROOT]
local root = (arg and arg[1]) or "."

local function read(path)
  local f = assert(io.open(root .. "/" .. path, "r"))
  local s = f:read("a")
  f:close()
  return s
end

local function set() return {} end
local function add(s, name, where) if not s[name] then s[name] = where or true end end

-- The definitions: `function dispatch.x(`, `function var:method(` after `---@class C` +
-- `local var = {}`, and callable tables (`---@overload fun` in the class of `dispatch.x = {}`).
local function definitions()
  local defs, classOf, overload = set(), {}, false
  local lastClass
  local n = 0
  for line in read("types/dispatch.lua"):gmatch("[^\n]*") do
    n = n + 1
    local class = line:match("^%-%-%-@class ([%w_%.]+)")
    if class then lastClass, overload = class, false end
    if line:match("^%-%-%-@overload fun") then overload = true end
    local var = line:match("^local ([%w_]+) = {}")
    if var and lastClass then classOf[var] = lastClass end
    local fn = line:match("^function (dispatch[%w_%.]*)%(")
    if fn then add(defs, fn, "types/dispatch.lua:" .. n) end
    local recv, method = line:match("^function ([%w_]+):([%w_]+)%(")
    if recv then
      assert(classOf[recv], "types/dispatch.lua:" .. n .. ": no class for '" .. recv .. "'")
      add(defs, classOf[recv] .. ":" .. method, "types/dispatch.lua:" .. n)
    end
    local tbl = line:match("^(dispatch%.[%w_]+) = {}")
    if tbl and overload then add(defs, tbl, "types/dispatch.lua:" .. n) end
    if not line:match("^%-%-%-") then overload = false end
  end
  return defs
end

-- Which class a method's receiver names in the docs' tables and prose.
local receivers = {
  q = "dispatch.queue", item = "dispatch.work_item", g = "dispatch.group", s = "dispatch.semaphore",
  t = "dispatch.task", src = "dispatch.source", io_ch = "dispatch.io", d = "dispatch.data",
  pool = "dispatch.pool", job = "dispatch.job", chan = "dispatch.channel",
  conn = "dispatch.connection", server = "dispatch.server",
}

local function documented()
  local docs, problems = set(), {}
  local pages = { "api.md" }
  for _, page in ipairs(pages) do
    local inFence, n = false, 0
    for line in read("docs/" .. page):gmatch("[^\n]*") do
      n = n + 1
      if line:match("^```") then inFence = not inFence
      elseif not inFence then
        local where = "docs/" .. page .. ":" .. n
        for span in line:gmatch("`([^`]+)`") do
          -- A call or constructor; `dispatch.time(<uptime seconds>)` is how a value prints.
          for name, after in span:gmatch("(dispatch%.[%w_%.]*[%w_])[%(%{](.?)") do
            if after ~= "<" then add(docs, name, where) end
          end
          local bare = span:match("^([%a_][%w_]*){}$")
          if bare and line:match("dispatch%.source%.") then add(docs, "dispatch.source." .. bare, where) end
          for recv, method in span:gmatch("([%a_][%w_]*):([%a_][%w_]*)[%(%{]") do
            local class = receivers[recv]
            if class then add(docs, class .. ":" .. method, where)
            else problems[#problems + 1] = where .. ": cannot tell the class of `" .. recv .. ":" .. method .. "`" end
          end
        end
      end
    end
  end
  return docs, problems, pages
end

-- The module as loaded: functions (callable tables too) and each type's methods.
local function module()
  local ok, dispatch = pcall(require, "dispatch")
  if not ok then return nil end
  local names = set()
  local function walk(t, prefix, seen)
    for k, v in pairs(t) do
      local name = prefix .. "." .. k
      if type(v) == "function" then add(names, name)
      elseif type(v) == "table" and not seen[v] then
        seen[v] = true
        if getmetatable(v) then add(names, name) end
        walk(v, name, seen)
      end
    end
  end
  walk(dispatch, "dispatch", {})
  for key, mt in pairs(debug.getregistry()) do
    if type(key) == "string" and key:match("^dispatch%.") and type(mt) == "table" then
      -- __index is the methods table, or a function whose first upvalue is (types with fields:
      -- ld_index, ld_index_adopting)
      local index, methods = rawget(mt, "__index"), nil
      if type(index) == "table" then methods = index
      elseif type(index) == "function" then _, methods = debug.getupvalue(index, 1) end
      for m in pairs(type(methods) == "table" and methods or {}) do add(names, key .. ":" .. m) end
    end
  end
  return names
end

local function missing(from, to, message, out)
  local list = {}
  for name, where in pairs(from) do
    if not to[name] then list[#list + 1] = name .. (type(where) == "string" and " (" .. where .. ")" or "") end
  end
  table.sort(list)
  for _, l in ipairs(list) do out[#out + 1] = message .. ": " .. l end
end

-- The definitions are Lua, as the language server reads them.
assert(loadfile(root .. "/types/dispatch.lua"))
local defs = definitions()
local docs, problems, pages = documented()
missing(docs, defs, "documented but not defined", problems)
missing(defs, docs, "defined but not documented", problems)
local loaded = module()
if loaded then
  missing(loaded, defs, "in the module but not defined", problems)
  missing(defs, loaded, "defined but not in the module", problems)
end
local count = 0
for _ in pairs(defs) do count = count + 1 end
if #problems > 0 then
  for _, p in ipairs(problems) do io.stderr:write("check-types: ", p, "\n") end
  io.stderr:write("check-types: ", #problems, " problem(s)\n")
  os.exit(1)
end
print(("check-types: %d functions and methods agree in %s, types/dispatch.lua%s"):format(
  count, table.concat(pages, ", "), loaded and " and the loaded module" or ""))
