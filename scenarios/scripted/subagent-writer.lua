-- subagent-writer.lua: the sub-agent: summarizing costs time and is an
-- external effect (an LLM call billed per request).
local Writer = {}

function Writer:summarize(doc)
  revenant.work(500)
  revenant.effect("summarize", doc)
  return "summary of " .. doc
end

return Writer
