-- toolrun-parent.lua: a fiber body that runs a sub-agent as a tool
-- (runAgentTool) and a finish hook that tells the user once the research is
-- done. The fiber keeps its topic in the stash; when it is recovered it
-- calls runAgentTool again with the same runId, so it meets the existing
-- row (its stored result, or the open run's end) instead of starting the
-- child's work again. The "broken" case gives no runId: the recovered
-- fiber starts a second run, the child works twice and the user is told
-- twice.
local Parent = {}

local function research(self, topic)
  return function(fiber)
    fiber:stash({topic = topic})
    local opts = {work = "4s"}
    if revenant.case ~= "broken" then opts.runId = 1 end
    local r = self:runAgentTool("researcher", {topic = topic}, opts)
    fiber:stash({topic = topic, status = r.status})
    revenant.log("tool run", r.runId, r.status, r.error)
    revenant.work(500) -- file the result
    return r.status
  end
end

function Parent:start(topic)
  self:runFiber("research", research(self, topic))
  return "started"
end

function Parent:onFiberRecovered(ctx)
  local snap = ctx.snapshot or {}
  if snap.status then return end -- the run's result was stashed: nothing to redo
  self:runFiber("research", research(self, snap.topic or "dogs"))
end

-- Called once per run that becomes terminal (live, or deferred after a
-- startup reconciliation): remember it and tell the user.
function Parent:onAgentToolFinish(run)
  self.sql:exec("CREATE TABLE IF NOT EXISTS finished(run_id INTEGER PRIMARY KEY, status TEXT)")
  self.sql:exec("INSERT INTO finished(run_id, status) VALUES(?, ?)", run.runId, run.status)
  revenant.effect("notify_user", "research")
end

return Parent
