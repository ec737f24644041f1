-- memory.lua: where an agent keeps a counter. A Lua global lives exactly as
-- long as the incarnation (like an isolate's memory); the agent's SQLite
-- survives. The "broken" case keeps the count in a global, so an eviction
-- resets it.
visits = 0 -- a global: gone with the incarnation

local Agent = {}

function Agent:onStart()
  self.sql:exec("CREATE TABLE IF NOT EXISTS counter(k INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
end

function Agent:visit()
  visits = visits + 1
  if revenant.case == "broken" then return visits end
  self.sql:exec("INSERT INTO counter(k, n) VALUES (1, 1) ON CONFLICT(k) DO UPDATE SET n = n + 1")
  return self.sql:exec("SELECT n FROM counter WHERE k = 1")[1].n
end

-- How many visits this incarnation's memory saw (for the facts).
function Agent:remembered()
  return visits
end

return Agent
