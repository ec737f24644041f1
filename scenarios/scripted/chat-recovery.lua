-- chat-recovery.lua: an AIChatAgent with its own onChatRecovery (seed 000
-- "Recovery strategies by provider"), for a provider that cannot continue
-- an assistant message: a turn cut mid-stream is thrown away and asked
-- again.
--
--   override async onChatRecovery(ctx) {
--     const last = ctx.messages.at(-1);
--     // nothing streamed (the SDK retries), or a cut continuation: the defaults
--     if (ctx.partialText === "" || last?.role !== "user") return {};
--     await this.schedule(0, "askAgain", { text: last.text });
--     return { persist: false, continue: false };   // we handle it
--   }
--   async askAgain(payload) { await this.saveMessages([userMessage(payload.text)]); }
--
-- Cases: "fixed" as above. "broken" forgets the options (returns {}): the
-- SDK persists and continues the partial answer AND askAgain answers the
-- same question again: two answers to one user text. "throws" reads a
-- field of a nil recoveryData: the error is reported (script_error) and the
-- SDK's defaults apply.
-- Also: stop() cancels the running turn (cancelChat), more() continues the
-- last assistant message (continueLastTurn).
local Agent = {}

function Agent:onChatRecovery(ctx)
  revenant.log("recovery", ctx.requestId, ctx.partialText, #ctx.partialParts, #ctx.messages)
  if revenant.case == "throws" then
    revenant.log("provider response", ctx.recoveryData.responseId) -- recoveryData is nil
  end
  local last = ctx.messages[#ctx.messages]
  -- nothing streamed (the SDK retries), or a cut continuation of an answer
  -- already there (asking again would answer the question twice): defaults
  if ctx.partialText == "" or not last or last.role ~= "user" then return {} end
  self:schedule(0, "askAgain", {text = last.text})
  if revenant.case == "broken" then return {} end
  return {persist = false, continue = false}
end

function Agent:askAgain(payload, schedule)
  revenant.log("asking again", payload.text, schedule.type)
  self:saveMessages(payload.text)
end

function Agent:stop()
  return self:cancelChat()
end

function Agent:more()
  return self:continueLastTurn()
end

return Agent
