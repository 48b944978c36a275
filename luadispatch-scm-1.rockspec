-- LuaRocks: `luarocks --lua-version=5.4 make` in a checkout builds dispatch.so with the Swift
-- toolchain (swift on PATH, see README.md) and installs it with the editor definitions.
rockspec_format = "3.0"
package = "luadispatch"
version = "scm-1"
source = {
   url = "git+file://.",
}
description = {
   summary = "Grand Central Dispatch (libdispatch) for Lua 5.4: queues, groups, semaphores, sources, I/O, tasks",
   detailed = [[
The LuaDispatch runtime as a C module: require("dispatch") in a stock lua5.4, then
dispatch.run() services the main queue (like uv.run in luv). Built from Swift; every
q:async is a real DispatchQueue.async.
]],
   labels = { "concurrency", "libdispatch", "gcd" },
}
dependencies = {
   "lua >= 5.4, < 5.5",
}
build = {
   type = "command",
   build_command = "scripts/build-module .build/module",
   install = {
      lib = { dispatch = ".build/module/dispatch.so" },
   },
   -- lua-language-server definitions (types/dispatch.lua), the documentation and the header C
   -- modules include (include/luadispatch.h), in the rock's own directory (`luarocks show
   -- luadispatch` prints it).
   copy_directories = { "types", "docs", "include" },
}
