-- The protocol half of the request/response servers (a small Redis and a keep-alive HTTP/1.1
-- server), shared by the dispatch.net examples in this folder and their luv twins in
-- scripts/benchmarks, so that only the socket layer differs between them. Plain Lua 5.4, no
-- library: `dofile` it and make one session per connection.
--
--   local proto = dofile("scripts/examples/reqresp.lua")
--   local feed = proto.resp(store)        -- or proto.http()
--   local replies, close = feed(bytes)    -- replies to every complete request, or nil
local M = {}
local find, sub, byte, upper = string.find, string.sub, string.byte, string.upper
local tonumber, tostring, concat = tonumber, tostring, table.concat

-- One command of the Redis protocol at `pos`: its words (a table) and the position after it,
-- or nil when the buffer ends first. Multibulk (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`) or inline
-- (`PING\r\n`). Raises on malformed input.
local function command(buf, pos)
  if byte(buf, pos) == 42 then  -- '*'
    local e = find(buf, "\r\n", pos, true)
    if not e then return nil end
    local n = tonumber(sub(buf, pos + 1, e - 1)) or error("protocol error: bad multibulk length")
    local words = {}
    pos = e + 2
    for i = 1, n do
      local c = byte(buf, pos)
      if not c then return nil end
      if c ~= 36 then error("protocol error: '$' expected") end
      e = find(buf, "\r\n", pos, true)
      if not e then return nil end
      local len = tonumber(sub(buf, pos + 1, e - 1)) or error("protocol error: bad bulk length")
      local s = e + 2
      if s + len + 1 > #buf then return nil end
      words[i] = sub(buf, s, s + len - 1)
      pos = s + len + 2
    end
    return words, pos
  end
  local e = find(buf, "\n", pos, true)
  if not e then return nil end
  local words, line = {}, sub(buf, pos, byte(buf, e - 1) == 13 and e - 2 or e - 1)
  for w in line:gmatch("%S+") do words[#words + 1] = w end
  return words, e + 1
end
M.command = command

local function bulk(s) return "$" .. #s .. "\r\n" .. s .. "\r\n" end

-- The reply to one command on `store` (a table shared by every connection), and whether the
-- connection ends after it.
local function execute(store, w)
  local name = upper(w[1] or "")
  if name == "PING" then return w[2] and bulk(w[2]) or "+PONG\r\n" end
  if name == "SET" then
    if not w[3] then return "-ERR wrong number of arguments for 'set' command\r\n" end
    store[w[2]] = w[3]
    return "+OK\r\n"
  end
  if name == "GET" then
    local v = store[w[2] or ""]
    return v and bulk(v) or "$-1\r\n"
  end
  if name == "INCR" then
    local key = w[2] or ""
    local n = tonumber(store[key] or "0")
    if not n or n ~= n // 1 then return "-ERR value is not an integer or out of range\r\n" end
    n = n // 1 + 1
    store[key] = tostring(n)
    return ":" .. n .. "\r\n"
  end
  if name == "CONFIG" then  -- redis-benchmark asks for "save" and "appendonly"
    local key = w[3] or ""
    return "*2\r\n" .. bulk(key) .. bulk("") end
  if name == "COMMAND" then return "*0\r\n" end
  if name == "QUIT" then return "+OK\r\n", true end
  return "-ERR unknown command '" .. (w[1] or "") .. "'\r\n"
end

-- A Redis session over `store`: feed(bytes) -> replies (nil if none yet), close.
function M.resp(store)
  local pending = ""
  return function(data)
    local buf = pending == "" and data or pending .. data
    local pos, n, out = 1, #buf, nil
    local one, count, close = nil, 0, false
    while pos <= n do
      local words, after = command(buf, pos)
      if not words then break end
      pos = after
      if #words > 0 then
        local reply, quit = execute(store, words)
        count = count + 1
        if count == 1 then one = reply
        else
          if count == 2 then out = {one} end
          out[count] = reply
        end
        if quit then close = true break end
      end
    end
    pending = pos > n and "" or sub(buf, pos)
    if count == 0 then return nil, close end
    return count == 1 and one or concat(out), close
  end
end

local body = "Hello, World!"
local keep = "HTTP/1.1 200 OK\r\nServer: reqresp\r\nContent-Type: text/plain\r\nContent-Length: " .. #body .. "\r\n\r\n" .. body
local keep10 = "HTTP/1.0 200 OK\r\nServer: reqresp\r\nConnection: keep-alive\r\nContent-Type: text/plain\r\nContent-Length: " .. #body .. "\r\n\r\n" .. body
local last = "HTTP/1.1 200 OK\r\nServer: reqresp\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: " .. #body .. "\r\n\r\n" .. body
M.http_body = body

-- An HTTP/1.1 session answering every request with a small text: feed(bytes) -> replies (nil
-- if none yet), close. Keep-alive as HTTP/1.1 says (HTTP/1.0 only with "Connection:
-- keep-alive"); request bodies with Content-Length are skipped.
function M.http()
  local pending = ""
  return function(data)
    local buf = pending == "" and data or pending .. data
    local pos, n, out, count, close = 1, #buf, nil, 0, false
    while pos <= n do
      local e = find(buf, "\r\n\r\n", pos, true)
      if not e then break end
      local head = sub(buf, pos, e + 1)
      local len = tonumber(head:match("\r\n[Cc][Oo][Nn][Tt][Ee][Nn][Tt]%-[Ll][Ee][Nn][Gg][Tt][Hh]:%s*(%d+)") or 0)
      if e + 3 + len > n then break end
      pos = e + 4 + len
      local line = find(head, "\r\n", 1, true)
      local v10 = sub(head, line - 3, line - 1) == "1.0"
      local conn = head:match("\r\n[Cc][Oo][Nn][Nn][Ee][Cc][Tt][Ii][Oo][Nn]:%s*([%w%-]+)")
      conn = conn and conn:lower()
      local reply
      if conn == "close" or (v10 and conn ~= "keep-alive") then reply, close = last, true
      else reply = v10 and keep10 or keep end
      count = count + 1
      if count == 1 then out = reply
      elseif count == 2 then out = {out, reply}
      else out[count] = reply end
      if close then break end
    end
    pending = pos > n and "" or sub(buf, pos)
    if count == 0 then return nil, close end
    return count == 1 and out or concat(out), close
  end
end

return M
