-- subagent-parent.lua: a fiber body that calls a sub-agent, keeps its
-- answer in the stash, then publishes. Recovery resumes after the call when
-- the stash has the answer. The "broken" case does not stash it, so a
-- recovered run calls the sub-agent again.
local Parent = {}

local function pipeline(self, doc, summary)
  return function(fiber)
    -- A resumed run is a new row with no snapshot: stash the carried answer
    -- again, or a second death before the end would call the writer again.
    if summary then fiber:stash({doc = doc, summary = summary}) end
    if not summary then
      summary = self:call("writer", "summarize", {doc})
      if revenant.case ~= "broken" then fiber:stash({doc = doc, summary = summary}) end
    end
    revenant.work(2000) -- format and review
    revenant.effect("publish", doc)
    return summary
  end
end

function Parent:publish(doc)
  local h = self:runFiber("pipeline", pipeline(self, doc, nil))
  return h.id
end

function Parent:onFiberRecovered(ctx)
  local snap = ctx.snapshot or {}
  self:runFiber("pipeline", pipeline(self, snap.doc or "doc-1", snap.summary))
end

return Parent
