-- a chat agent whose recovery hook is misspelt: the loader names the SDK's
local A = {}
function A:onChatRecover(ctx) return {continue = false} end
return A
