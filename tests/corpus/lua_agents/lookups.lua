-- lookups.lua: the host reads a script's callbacks as a script would, through
-- __index (an inherited method is found), but protected (tests/sh_lua_agents.sh):
-- an __index that throws or loops ends the run with its message, never the
-- process; a fiber body that starts a fiber at once, again and again, gets an
-- error in the body instead of overflowing the C stack.
local Base = {}
function Base:onStart() revenant.log("inherited onStart") end

local Agent = {}
function Agent:tick() revenant.log("tick") end
local armed = false -- set by a callback: never in the loader's look-ups
function Agent:go() armed = true; self:schedule(1, "tick") end
function Agent:later() self:schedule(1, "nowhere") end

local function nest(fiber) revenant.log("level"); Agent.me:runFiber("nest", nest) end
function Agent:recurse()
  Agent.me = self
  self:runFiber("nest", nest)
end

local mode = revenant.case
return setmetatable(Agent, {__index = function(t, k)
  if mode == "throws" then error("no such callback: " .. k) end
  if mode == "loops" then while true do end end
  if mode == "alarm" and k == "onAlarm" and armed then error("onAlarm is not here today") end
  if mode == "schedule" and k == "nowhere" then error("schedule looked up " .. k) end
  return Base[k]
end})
