-- onstart-schedule.lua: an onStart that arms the agent's periodic tick.
--
--   async onStart() { await this.scheduleEvery(30, "tick"); }
--
-- scheduleEvery is idempotent on its callback, so every start (after each
-- restart) finds the row already there. The "broken" case re-arms by hand:
-- a one-shot schedule in onStart that tick renews; every restart starts
-- one more chain, and the chains pile up.
local Agent = {}

function Agent:onStart()
  self.sql:exec("CREATE TABLE IF NOT EXISTS ticks(at INTEGER)")
  if revenant.case == "broken" then
    self:schedule(30, "tick")
  else
    self:scheduleEvery(30, "tick")
  end
end

function Agent:tick(_payload, schedule)
  self.sql:exec("INSERT INTO ticks(at) VALUES (?)", revenant.now())
  revenant.log("tick", schedule.id)
  if revenant.case == "broken" then self:schedule(30, "tick") end
end

return Agent
