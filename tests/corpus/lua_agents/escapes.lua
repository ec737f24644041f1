-- escapes.lua: each method tries to reach past the sandbox from a callback
-- (tests/sh_lua_agents.sh); the run must end with exit 2.
local Agent = {}
function Agent:execute() os.execute("touch /tmp/revenant-escaped") end
function Agent:open() return io.open("/etc/passwd") end
function Agent:requireOutside() return require("../secret") end
function Agent:requireModule() return require("socket") end
function Agent:binary() return load("\27Lua binary") end
function Agent:dump() return string.dump(function() end) end
function Agent:caught()
  local ok = pcall(os.execute, "true") -- catching the refusal does not help
  return ok
end
function Agent:loop() while true do end end
function Agent:bomb()
  local t = {}
  for i = 1, 1e9 do t[i] = string.rep("x", 1024) .. i end
end
function Agent:fail() local x = nil; return x.field end
return Agent
