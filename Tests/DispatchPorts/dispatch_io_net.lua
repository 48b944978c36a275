-- Port of swift-corelibs-libdispatch tests/dispatch_io_net.c ("Dispatch IO Network test").
-- checks: 6
--
-- A server reads a 2 MiB file with dispatch_read (one delivery, the whole file), writes it to
-- the connection it accepted with dispatch_write (no error, nothing left) and closes the
-- connection; a client started as a second process by the server, with the port and the
-- file's path as arguments, connects to localhost, reads the same file with dispatch_read and
-- the connection with chained dispatch_read calls until one brings nothing, and checks that both
-- reads succeed with the file's size and equal bytes.
-- Adapted: sockets come from dispatch.net (listen on 127.0.0.1, connect, accept); the client is
-- this script run again by the same luadispatch binary with the arguments "client PORT FILE"
-- (the C test runs its own executable). The client's checks are its own (5); the server waits
-- for the client's exit with a process source and checks that it exited with status 0 after a
-- summary with no failure, then relays the client's output. The file is removed by the server
-- at the end (the C client unlinks it).
local dispatch = require("dispatch")
local T = dofile((arg[0]:match("^(.*)/") or ".") .. "/bsdtests.lua")

if arg[1] == "client" then
    T.start("Dispatch IO Network test, client")
    local port, path = tonumber(arg[2]), arg[3]
    local connected = dispatch.semaphore(0)
    local sockfd, cerr
    dispatch.net.connect({host = "localhost", port = port}, dispatch.global(), function(fd, err)
        sockfd, cerr = fd, err
        connected:signal()
    end)
    connected:wait()
    assert(sockfd, cerr)
    local fd = assert(dispatch.fd.open(path, "r"))
    local size = 2 * 1024 * 1024
    local g_d1, g_d2, g_error = dispatch.data(), dispatch.data(), 0
    local g = dispatch.group()
    g:enter()
    dispatch.io.read(fd, size, dispatch.global(), function(d1, err)
        T.errno("Client-dict-read error", err, 0)
        T.long("Client-dict-dispatch data size", #d1, size)
        g_d1 = d1
        g:leave()
    end)
    local b
    b = function(d2, err)
        g_d2 = g_d2 .. d2
        if err == 0 and #d2 > 0 then
            dispatch.io.read(sockfd, math.huge, dispatch.global(), b)
        else
            g_error = err
            g:leave()
        end
    end
    g:enter()
    dispatch.io.read(sockfd, math.huge, dispatch.global(), b)
    T.group_wait(g)
    T.errno("Client-read error", g_error, 0)
    T.long("Client-dispatch data size", #g_d2, size)
    T.long("Client-dispatch data contents", g_d1 == g_d2, true)
    dispatch.fd.close(fd)
    dispatch.fd.close(sockfd)
    T.stop()
end

local function self_exe()
    local p = io.popen("readlink -f /proc/" .. dispatch.pid() .. "/exe")
    local exe = p:read("l")
    p:close()
    return exe
end

T.start("Dispatch IO Network test")
local sockfd, port = assert(dispatch.net.listen{host = "127.0.0.1", port = 0, backlog = 3})
io.stderr:write(string.format("Server started and listening on port %d\n", port))
local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir " .. dir))
local path = T.large_file()
local log = dir .. "/client.log"
local read_fd = assert(dispatch.fd.open(path, "r"))

-- Start the client (its pid comes back from the shell that starts it in the background).
local cmd = string.format("('%s' '%s' client %d '%s' >'%s' 2>&1; echo \"exit=$?\" >>'%s') & echo $!",
                          self_exe(), arg[0], port, path, log, log)
local p = assert(io.popen(cmd))
local clientid = tonumber(p:read("l"))
p:close()
local exited = dispatch.group()
exited:enter()
local proc = assert(dispatch.source.process{pid = clientid, events = {"exit"}, queue = dispatch.global()})
proc:set_event_handler(function() proc:cancel() end)
proc:set_cancel_handler(function() exited:leave() end)
proc:resume()

-- accept(), which waits for the client in C: a read source on the listening socket.
local accepted = dispatch.semaphore(0)
local clientfd
local listener = dispatch.source.read{fd = sockfd, queue = dispatch.global()}
listener:set_event_handler(function()
    clientfd = dispatch.net.accept(sockfd)
    if clientfd then listener:cancel(); accepted:signal() end
end)
listener:resume()
accepted:wait()
io.stderr:write("Server accepted connection. Server now writing\n")
local size = 2 * 1024 * 1024
local g = dispatch.group()
g:enter()
dispatch.io.read(read_fd, size, dispatch.global(), function(d, r_err)
    io.stderr:write("Server-dispatch_read()\n")
    T.errno("Server-read error", r_err, 0)
    T.long("Server-dispatch data size", #d, size)
    g:enter()
    dispatch.io.write(clientfd, d, dispatch.global(), function(remaining, w_err)
        T.errno("Server-write error", w_err, 0)
        T.long("Server-dispatch write remaining data", #remaining, 0)
        dispatch.fd.close(clientfd) -- Sending the client EOF
        g:leave()
    end)
    dispatch.fd.close(read_fd)
    g:leave()
end)
T.group_wait(g)
io.stderr:write("Shutting down server\n")
dispatch.fd.close(sockfd)
T.group_wait(exited)
local f = assert(io.open(log, "r"))
local out = f:read("a")
f:close()
for line in out:gmatch("[^\n]+") do print("  client: " .. line) end
T.long("client passed all its checks", out:match("%[SUMMARY%][^\n]*: 5 checks, 5 passed, 0 failed, 0 uncaught errors") ~= nil, true)
T.long("client exit status", out:match("exit=(%d+)\n$"), "0")
os.remove(path)
os.execute("rm -rf " .. dir)
T.stop()
