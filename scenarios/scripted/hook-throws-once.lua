-- hook-throws-once.lua: an onFiberRecovered that throws on its first call
-- for a row and resumes on the second. It counts its calls in its own
-- table: memory would not do (the Lua state dies with the incarnation),
-- storage survives.
local Agent = {}

local function job(from)
  return function(fiber)
    -- A resumed run is a new row with no snapshot: record the parts already
    -- done again, or a second death before the next part reruns them.
    if from > 1 then fiber:stash({done = from - 1}) end
    for i = from, 3 do
      revenant.work(1000)
      revenant.effect("part", i)
      fiber:stash({done = i})
    end
    return "ok"
  end
end

function Agent:start()
  self:runFiber("job", job(1))
end

function Agent:onFiberRecovered(ctx)
  self.sql:exec("CREATE TABLE IF NOT EXISTS hook_calls(fiber INTEGER PRIMARY KEY, n INTEGER)")
  self.sql:exec("INSERT INTO hook_calls(fiber, n) VALUES (?, 1) "
                .. "ON CONFLICT(fiber) DO UPDATE SET n = n + 1", ctx.id)
  local n = self.sql:exec("SELECT n FROM hook_calls WHERE fiber = ?", ctx.id)[1].n
  revenant.log("onFiberRecovered call", n, "for fiber", ctx.id)
  if n == 1 then error("upstream not ready yet") end
  local done = ctx.snapshot and ctx.snapshot.done or 0
  self:runFiber("job", job(done + 1))
end

return Agent
