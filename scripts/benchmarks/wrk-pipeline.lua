-- wrk script: 16 requests in each write (HTTP pipelining), for the net_http_pipelined row.
--   wrk -t1 -c64 -d5s -s scripts/benchmarks/wrk-pipeline.lua http://127.0.0.1:PORT/
local depth = 16
init = function()
  local r = {}
  for i = 1, depth do r[i] = wrk.format(nil, "/") end
  req = table.concat(r)
end
request = function() return req end
