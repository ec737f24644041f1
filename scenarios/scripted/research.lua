-- research.lua: seed 000's research agent, ported from TypeScript.
--
--   class ResearchAgent extends Agent {
--     async startResearch(topic) {
--       this.runFiber("research", async (ctx) => { ... ctx.stash({topic, done}) ... })
--     }
--     async onFiberRecovered(ctx) {
--       if (ctx.name === "research") this.runFiber("research", body(ctx.snapshot))
--     }
--   }
local STEPS = {"search", "read", "summarize", "write"}

-- The fiber body: the steps after `done`, each a turn of work, an external
-- effect and a stash of the progress.
local function research(topic, done)
  return function(fiber)
    fiber:stash({topic = topic, done = done})
    for i = done + 1, #STEPS do
      revenant.work(500)
      revenant.effect("step", topic .. ":" .. STEPS[i])
      fiber:stash({topic = topic, done = i})
    end
    revenant.log("research done", topic)
    return {topic = topic, steps = #STEPS}
  end
end

local ResearchAgent = {}

function ResearchAgent:startResearch(topic)
  self:runFiber("research", research(topic, 0))
  return "started"
end

function ResearchAgent:onFiberRecovered(ctx)
  if ctx.name ~= "research" then return end
  local snap = ctx.snapshot
  if not snap then return end -- never stashed: nothing to resume
  self:runFiber("research", research(snap.topic, snap.done))
end

return ResearchAgent
