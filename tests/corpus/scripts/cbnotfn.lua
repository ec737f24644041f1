-- an agent whose onAlarm is a value, not a function: the runtime would skip it silently
local A = {}
A.onAlarm = "logAlarm"
function A:logAlarm() end
return A
