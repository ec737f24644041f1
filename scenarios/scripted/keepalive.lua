-- keepalive.lua: keepAliveWhile around work that can throw, and an awaited
-- fiber whose value answers the request.
--
--   async pay(card) { return this.keepAliveWhile(async () => { ...; throw new Error("card declined") }) }
--
-- keepAliveWhile releases its ref in a finally, whatever fn does. The
-- "broken" case takes the ref by hand and throws before disposing it: the
-- ref leaks for the rest of the incarnation.
local Agent = {}

local function charge(card)
  revenant.work(1000)
  if card == "expired" then error("card declined") end
  return "paid with " .. card
end

function Agent:pay(card)
  if revenant.case == "broken" then
    local dispose = self:keepAlive()
    local r = charge(card)
    dispose()
    return r
  end
  return self:keepAliveWhile(function() return charge(card) end)
end

function Agent:report()
  local h = self:runFiber("report", function(fiber)
    revenant.work(500)
    fiber:stash({rows = 3})
    return {rows = 3}
  end)
  return h:await()
end

return Agent
