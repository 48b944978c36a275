-- fuzz seed 11000192: hang
-- no exit within 30 s
local dispatch = require("dispatch")
local __wq = dispatch.queue("fuzz.watchdog")
local __wd = dispatch.source.timer{deadline = 1.0, queue = __wq}
__wd:set_event_handler(function() io.stdout:write("fuzz: watchdog\n"); dispatch.exit(0) end)
__wd:resume()
local V, F = {}, {}
local P = {queue = dispatch.queue("proto"), group = dispatch.group(), semaphore = dispatch.semaphore(1),
  work_item = dispatch.work_item(function() end), source = dispatch.source.data_add{},
  io = dispatch.io{path = "proto.txt", mode = "w"}, data = dispatch.data("proto"), time = dispatch.now(),
  walltime = dispatch.walltime(), key = dispatch.specific_key("k"), once = dispatch.once(function() return 1 end)}
P.io:close()
pcall(function() V[6] = dispatch.data.map("fifo") end)
