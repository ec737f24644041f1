-- toolrun-race.lua: three researchers answer the same question as tool
-- runs, each awaited by its own fiber; the first answer wins. The SDK
-- pattern: onAgentToolFinish of the first completed run aborts every run
-- still open (their AbortSignal: the row ends `aborted`, the child gets
-- cancelAgentToolRun and stops working), and the fibers awaiting them
-- resume with status "aborted". The "broken" case is the naive hook: it
-- answers every completion and aborts nothing, so every researcher works to
-- the end and the question is answered three times.
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

-- The first completed run answers; the losers still open are aborted. The
-- answer is also recorded in the agent's own table: when the parent was
-- down while several researchers finished, its startup reconciliation
-- finds them all completed and runs their hooks one after another
-- (deferred), with nothing left open to abort, so the record is what keeps
-- the answer to one (the swarm found this: the abort alone answers twice).
function Racer:onAgentToolFinish(run)
  if run.status ~= "completed" then return end -- the aborted losers
  if revenant.case == "broken" then -- answers every completion, aborts nothing
    revenant.effect("answer", "dogs")
    return
  end
  self.sql:exec("CREATE TABLE IF NOT EXISTS answers(question TEXT PRIMARY KEY, run_id INTEGER)")
  if #self.sql:exec("SELECT 1 FROM answers WHERE question = 'dogs'") == 0 then
    -- the record first: a death before it commits rolls it back before any answer
    self.sql:exec("INSERT INTO answers(question, run_id) VALUES('dogs', ?)", run.runId)
    revenant.effect("answer", "dogs")
  end
  for _, id in ipairs(self:openAgentTools()) do
    self:abortAgentTool(id)
  end
end

return Racer
