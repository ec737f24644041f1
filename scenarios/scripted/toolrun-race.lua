-- toolrun-race.lua: three researchers answer the same question as tool
-- runs, each awaited by its own fiber; the first answer wins. The SDK
-- pattern: onAgentToolFinish of the first completed run aborts every run
-- still open (their AbortSignal: the row ends `aborted`, the child gets
-- cancelAgentToolRun and stops working), and the fibers awaiting them
-- resume with status "aborted". The "broken" case forgets to abort: every
-- researcher works to the end and the question is answered three times.
local Racer = {}

local function ask(self, who, work)
  return function(fiber)
    local r = self:runAgentTool(who, {question = "dogs"}, {work = work})
    revenant.log(who, r.runId, r.status)
    return r.status
  end
end

function Racer:race()
  self:runFiber("ask-fast", ask(self, "fast", "2s"))
  self:runFiber("ask-mid", ask(self, "mid", "4s"))
  self:runFiber("ask-slow", ask(self, "slow", "6s"))
  return #self:openAgentTools() -- 3 open runs
end

-- A fiber interrupted by a death does not ask again (its run is reconciled).
function Racer:onFiberRecovered(ctx) end

function Racer:onAgentToolFinish(run)
  if run.status ~= "completed" then return end -- the aborted losers
  revenant.effect("answer", "dogs")
  if revenant.case == "broken" then return end
  for _, id in ipairs(self:openAgentTools()) do
    self:abortAgentTool(id)
  end
end

return Racer
