-- lua_effects_once: the Lua twin of the built-in effects_once (fiber
-- effects): an effect step runs at most once per fiber, counting a fiber
-- resumed after recovery as the same fiber as the one it resumes.
-- scenarios/examples/lua-effects-once.json shows the two agree.

local root = {}   -- "actor/fiber" -> first fiber of its resume chain
local first = {}  -- "actor/root/pc/effect" -> the record of its first run
local told = {}   -- keys already reported (once per key, as the built-in)

revenant.invariant("lua_effects_once", {
  kinds = {"fiber_start", "effect"},
  on_record = function(r)
    local a = r.actor or "-"
    if r.kind == "fiber_start" then
      local from = r.recovered_from
      root[a .. "/" .. r.fiber] = from ~= 0 and (root[a .. "/" .. from] or from) or r.fiber
      return
    end
    local chain = root[a .. "/" .. r.fiber] or r.fiber
    local key = a .. "/" .. chain .. "/" .. r.pc .. "/" .. r.effect
    local f = first[key]
    if not f then
      first[key] = r
    elseif not told[key] then
      told[key] = true
      revenant.violate(string.format("effect %q at pc %d of fiber %d ran twice: at t=%.3fs and at t=%.3fs",
                                     r.effect, r.pc, r.fiber, f.at / 1e6, r.at / 1e6), f, r)
    end
  end,
})
