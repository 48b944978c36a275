-- The standard library's line reads and writes: every line of FILE read with io.lines and
-- written back with io.write (standard output: the benchmark sends it to /dev/null). The
-- benchmark times it under `luadispatch` and under stock `lua5.4`, in turn.
-- usage: luadispatch io_lines.lua FILE      (lua5.4 io_lines.lua FILE)
local path = assert(..., "usage: io_lines.lua FILE")
for line in io.lines(path) do io.write(line, "\n") end
