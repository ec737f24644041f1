-- charged_once.lua: "each order is charged exactly once", as a Lua
-- invariant over the trace: the shop's script records every charge as the
-- effect "charge:<order id>" (revenant.effect("charge", id)); a second one
-- for the same order, in any fiber or incarnation, is a violation.
local first = {} -- "actor/effect" -> the record of the first charge

revenant.invariant("charged_once", {
  kinds = {"effect"},
  on_record = function(r)
    if r.effect:sub(1, 7) ~= "charge:" then return end
    local key = (r.actor or "-") .. "/" .. r.effect
    local f = first[key]
    if not f then
      first[key] = r
    elseif f ~= true then
      revenant.violate(string.format("order %s was charged twice: at t=%.3fs and at t=%.3fs",
                                     r.effect:sub(8), f.at / 1e6, r.at / 1e6), f, r)
      first[key] = true -- once per order
    end
  end,
})
