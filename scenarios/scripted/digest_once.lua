-- digest_once.lua: "each list's digest goes out once per cron occurrence",
-- as a Lua invariant: the agent records a send as the effect
-- "email:<list>@<due time>"; the same one twice is a violation.
local first = {} -- "actor/effect" -> the record of the first send

revenant.invariant("digest_once", {
  kinds = {"effect"},
  on_record = function(r)
    if r.effect:sub(1, 6) ~= "email:" then return end
    local key = (r.actor or "-") .. "/" .. r.effect
    local f = first[key]
    if not f then
      first[key] = r
    elseif f ~= true then
      revenant.violate(string.format("digest %s went out twice: at t=%.3fs and at t=%.3fs",
                                     r.effect:sub(7), f.at / 1e6, r.at / 1e6), f, r)
      first[key] = true
    end
  end,
})
