-- recovery_sees_last_stash: onFiberRecovered gets the last snapshot the
-- fiber (or the chain it resumes) stashed. Stricter than the built-in
-- stash_durable, which asks only for the last *committed* stash: a user
-- who expects ctx.stash() to be durable when it returns writes this one.

local root = {}   -- "actor/fiber" -> first fiber of its resume chain
local last = {}   -- "actor/root" -> the chain's last stash record

local function chain(a, fiber) return root[a .. "/" .. fiber] or fiber end

revenant.invariant("recovery_sees_last_stash", {
  kinds = {"fiber_start", "stash", "hook_begin"},
  on_record = function(r)
    local a = r.actor or "-"
    if r.kind == "fiber_start" then
      if r.recovered_from ~= 0 then root[a .. "/" .. r.fiber] = chain(a, r.recovered_from) end
    elseif r.kind == "stash" then
      last[a .. "/" .. chain(a, r.fiber)] = r
    else -- hook_begin: the recovery hook is handed the row
      local s = last[a .. "/" .. chain(a, r.fiber)]
      if s and s.value ~= r.snapshot then
        revenant.violate(string.format("the recovery hook of fiber %d got %s, but its last stash (t=%.3fs) was %s",
                                       r.fiber, r.snapshot, s.at / 1e6, s.value), s, r)
      end
    end
  end,
})
