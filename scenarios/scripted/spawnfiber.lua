-- spawnfiber.lua: seed 001's spawnFiber user code, ported to runFiber.
--
-- Seed 001 ("Forever", Layer 2) writes the method a fiber runs as
--   async doWork(payload, ctx) {
--     const state = ctx.snapshot ?? { step: 0 };
--     for (let i = state.step; i < 5; i++) { await this.step(i); this.stashFiber({ step: i + 1 }); }
--   }
-- and recovery re-invokes it with its snapshot. The SDK replaced spawnFiber
-- by runFiber + onFiberRecovered; this is the same user code on that API.
-- The "broken" case forgets the snapshot and starts over from step 0.
local N = 5

local function doWork(payload, from)
  return function(fiber)
    for i = from, N - 1 do
      revenant.work(400)
      revenant.effect("step", payload.job .. "#" .. i)
      fiber:stash({step = i + 1, job = payload.job})
    end
    return {job = payload.job, steps = N}
  end
end

local Agent = {}

function Agent:spawnWork(payload)
  self:runFiber("doWork", doWork(payload, 0))
end

function Agent:onFiberRecovered(ctx)
  local snap = ctx.snapshot or {step = 0}
  local from = snap.step
  if revenant.case == "broken" then from = 0 end -- the bug: ignores the snapshot
  self:runFiber("doWork", doWork({job = snap.job or "?"}, from))
end

return Agent
