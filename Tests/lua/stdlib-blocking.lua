-- The standard library's blocking calls, as the runtime replaces them (CLuaShim/stdlib), on
-- inputs that make them wait: BlockingCallsCLITests runs this file under `luadispatch` and
-- under stock `lua5.4`, with the same standard input (a pipe), and requires the same output.
-- Usage: printf '  42 0x1F rest\nsecond\n3.5e1x' | luadispatch Tests/lua/stdlib-blocking.lua DIR

local dir = assert(arg[1], "usage: stdlib-blocking.lua DIR")

local function show(label, ...)
  local t = table.pack(...)
  for i = 1, t.n do
    local v = t[i]
    t[i] = (type(v) == "string" or type(v) == "number" or type(v) == "boolean" or v == nil)
           and string.format("%q", v) or type(v)
  end
  print(label, table.concat(t, " "))
end

local function try(label, f, ...) show(label, pcall(f, ...)) end

-- A command printing its arguments' pieces with a pause between them (the reader waits).
local function slowly(...)
  local parts = {}
  for i, piece in ipairs{...} do
    parts[#parts + 1] = (i > 1 and "sleep 0.05; " or "") .. "printf '" .. piece .. "'"
  end
  return table.concat(parts, "; ")
end

-- Standard input.
show("stdin n n l L", io.read("n", "n", "l", "L"))
show("stdin 3 0 n", io.read(3, 0, "n"))
show("stdin a a l 0", io.read("a", "a", "l", 0))

-- Reading pipes whose data arrives in pieces.
show("a", io.popen(slowly("a\\nb", "c\\n", "d")):read("a"))
show("l L l l", io.popen(slowly("one\\ntw", "o\\nthr", "ee")):read("l", "L", "l", "l"))
show("n across", io.popen(slowly("1.5e", "3 0x", "1F -", "7 x")):read("n", "n", "n", "n", "l"))
show("n bad", io.popen(slowly("0x", "zz")):read("n", "l"))
show("n long", io.popen(slowly(string.rep("1", 150), string.rep("2", 100))):read("n", "a"))
show("chars", io.popen(slowly("abc", "defg", "h")):read(2, 4, 0, 10, 0, 1))
do
  local f = io.popen(slowly(string.rep("x", 3000), string.rep("y", 3000) .. "\\nz"))
  local line = f:read("l")
  show("long line", #line, line:sub(1, 2), line:sub(-2), f:read("a"))
  show("close", f:close())
end
do
  local f = io.popen("seq 1 30000")
  local s = f:read("a")
  local sum = 0
  for i = 1, #s, 97 do sum = sum + s:byte(i) end
  show("big a", #s, sum, f:read("a"), f:read("l"), f:read(0))
  f:close()
  f = io.popen(slowly(string.rep("q", 5000), string.rep("r", 5000)))
  show("big n", #f:read(9000), #f:read(9000), f:read(1))
  f:close()
end
do
  local t = {}
  for a, b in io.popen(slowly("1 2\\n", "3 4\\n5")):lines("n", "n") do t[#t + 1] = a .. ":" .. tostring(b) end
  show("lines n n", table.concat(t, ","))
  t = {}
  io.input(io.popen(slowly("x\\ny", "\\n\\nz")))
  for l in io.lines() do t[#t + 1] = "[" .. l .. "]" end
  show("io.lines", table.concat(t))
  t = {}
  for l in io.popen(slowly("p\\nq", "\\n")):lines("L") do t[#t + 1] = l end
  show("lines L", table.concat(t, "|"))
  local it = io.lines(dir .. "/small")
  show("io.lines file", it(), it(), it())
  try("lines after end", it)
end

-- Errors, as liolib reports them.
do
  local f = io.popen("true")   -- (a command that writes could find its reader closed: EPIPE)
  f:close()
  try("read closed", f.read, f)
  try("lines closed", f.lines, f)
  try("write closed", f.write, f, "x")
  try("bad format", io.read, "x")
  local p = io.popen(slowly("line\\n", "more"))
  try("bad format 2", p.read, p, "l", {})
  show("rest", p:read("a"), p:close())
  try("popen mode", io.popen, "true", "rw")
  try("popen mode 2", io.popen, "true", "r+")
  local w = io.popen("cat > /dev/null", "w")
  show("read w", w:read("l"))
  show("close w", w:close())
  local r = io.popen("true", "r")
  show("write r", r:write("x"))
  show("close r", r:close())
  io.input(io.popen("true"))
  io.input():close()
  try("default input closed", io.read)
  try("default input lines", io.lines)
  local g = io.popen(slowly("a\\n", "b\\n"))
  local lines = g:lines()
  show("lines", lines(), lines(), lines())
  g:close()
  try("lines closed later", lines)
end

-- Exit statuses.
show("execute", os.execute())
show("execute 0", os.execute("sleep 0.05"))
show("execute 5", os.execute("exit 5"))
show("execute kill", os.execute("kill -TERM $$"))
show("close 3", io.popen("sleep 0.05; exit 3"):close())
show("close kill", io.popen("kill -KILL $$"):close())
show("close ok", io.popen("true"):close())
show("io.close", io.close(io.popen("exit 2")))

-- Writing: what reaches the pipe's reader, byte for byte.
local function written(setup)
  local out = dir .. "/written"
  local f = io.popen("sleep 0.1; cat > " .. out, "w")
  setup(f)
  show("closed", f:close())
  local r = io.open(out, "rb")
  local s = r:read("a")
  r:close()
  return s
end
show("numbers", written(function(f)
  show("write returns f", f:write(1, " ", -0.0, " ", 1e300, " ", math.huge, " ", -math.huge, " ",
                                  math.mininteger, " ", 2^53, " ", 0.1, "\n") == f)
end))
show("big write", #written(function(f)
  f:write(string.rep("a", 100000), string.rep("b", 5000))
  for i = 1, 3000 do f:write(i, "\n") end
end))
for _, mode in ipairs{"no", "line", "full"} do
  local s = written(function(f)
    f:setvbuf(mode)
    for i = 1, 200 do f:write("line ", i, "\n", string.rep("-", i * 10)) end
  end)
  local sum = 0
  for i = 1, #s do sum = (sum * 31 + s:byte(i)) % 1000003 end
  show("setvbuf " .. mode, #s, sum)
end
show("io.write", written(function(f)
  io.output(f)
  show("io.write returns f", io.write("x", 1, "y") == f, io.write() == f)
  io.output(io.stdout)
end))

-- Regular files read line by line in every state stdio can leave them in (a line is copied
-- from stdio's buffer a run at a time): long lines, buffer boundaries, unbuffered and line
-- buffered streams, look-ahead put back by a number's read, reading after writing.
do
  local function digest(s)
    local sum = 0
    for i = 1, #s do sum = (sum * 31 + s:byte(i)) % 1000003 end
    return #s .. ":" .. sum
  end
  local name = dir .. "/lines"
  local content = {"short", string.rep("long", 5000), "", "nul\0in\0it", string.rep("b", 4095),
                   string.rep("c", 4096), string.rep("d", 4097), "\r", "last without newline"}
  local f = assert(io.open(name, "wb"))
  f:write(table.concat(content, "\n"))
  f:close()
  for _, mode in ipairs{"full", "line", "no"} do
    for _, format in ipairs{"l", "L"} do
      local g = assert(io.open(name, "r"))
      g:setvbuf(mode, 100)
      local t = {}
      for l in g:lines(format) do t[#t + 1] = digest(l) end
      show("file lines " .. mode .. " " .. format, table.concat(t, " "), g:read("l"), g:read(0))
      g:close()
    end
  end
  local t = {}
  for a, b, c in io.lines(name, 3, "L", "n") do t[#t + 1] = digest(a) .. "," .. digest(b or "") .. "," .. tostring(c) end
  show("file lines 3 L n", table.concat(t, " "))
  -- A number ending on a buffer's boundary, then the rest of its line.
  f = assert(io.open(name, "w"))
  f:write(string.rep("x", 4090), "\n", "12345 678\nnext\n", string.rep("7", 4096), "\nend")
  f:close()
  for _, mode in ipairs{"full", "no"} do
    local g = assert(io.open(name, "r"))
    g:setvbuf(mode)
    local x = g:read("l")
    show("n at boundary " .. mode, #x, g:read("n", "l", "L", "n", "l", "l", "l"))
    g:close()
  end
  -- Read and write on one file.
  for _, open in ipairs{"w+", "r+", "a+"} do
    local g = assert(io.open(name, open))
    g:write("first\nsecond\n")
    g:seek("set")
    local a, b = g:read("l", "L")
    g:seek("cur")
    g:write("third\n")
    g:seek("set", 0)
    show("read and write " .. open, a, b, g:read("a"))
    g:seek("set", 6)
    show("lines after seek " .. open, g:read("l", "l", "l", "l"))
    g:close()
  end
end
