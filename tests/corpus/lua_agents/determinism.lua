-- determinism.lua: everything stock Lua would let leak between processes,
-- logged into the trace (tests/sh_lua_agents.sh runs it in two processes
-- and compares the trace hashes).
local Agent = {}

function Agent:leak()
  local t = {}
  for i = 1, 200 do t["key" .. i] = i end      -- string keys: hash order in stock Lua
  t[{}] = "table key"                           -- a table as a key
  local order = {}
  for k in pairs(t) do order[#order + 1] = tostring(k) end
  revenant.log(table.concat(order, ","))
  revenant.log(tostring({}), tostring(print), string.format("%p", {}))
  local a = {}
  for i = 1, 100 do a[i] = {k = i % 7, i = i} end
  table.sort(a, function(x, y) return x.k < y.k end)  -- equal keys: stable
  local s = {}
  for i = 1, 100 do s[i] = a[i].i end
  revenant.log(table.concat(s, ","))
  revenant.log(math.random(), math.random(1000000), revenant.random(6))
  local rows = self.sql:exec("SELECT random() AS r, datetime('now') AS d")
  revenant.log(rows[1].r, rows[1].d)
  return #order
end

return Agent
