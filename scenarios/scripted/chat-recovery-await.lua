-- chat-recovery-await.lua: an AIChatAgent whose onChatRecovery awaits an
-- upstream before it answers (the SDK awaits the hook: agents-sdk A.12; seed
-- 000's research agent awaits a fetch in its recovery). The same file is
-- the upstream's script: a "policy" service whose decide() works a while.
--
--   override async onChatRecovery(ctx) {
--     const last = ctx.messages.at(-1);
--     if (ctx.partialText === "" || last?.role !== "user") return {};
--     const how = await this.env.POLICY.decide(ctx.requestId);   // waits
--     if (how !== "ask-again") return {};
--     await this.schedule(0, "askAgain", { text: last.text });
--     return { persist: false, continue: false };
--   }
--
-- While the hook waits, the turn's recovery fiber stays open: a crash in
-- the wait leaves the row, and the next wake calls onChatRecovery again.
-- Cases: "fixed" schedules askAgain after the wait, in the turn that
-- answers (and deletes the row). "broken" schedules it before the wait: the
-- yield commits the schedule row, the crash in the wait does not undo it,
-- the re-run hook schedules it again, and the question is asked (and
-- answered) twice.
local Agent = {}

function Agent:onChatRecovery(ctx)
  local last = ctx.messages[#ctx.messages]
  if ctx.partialText == "" or not last or last.role ~= "user" then return {} end
  revenant.log("asking the policy", ctx.requestId)
  if revenant.case == "broken" then self:schedule(0, "askAgain", {text = last.text}) end
  local how = self:call("policy", "decide", {ctx.requestId}) -- raises if the call fails
  revenant.log("the policy says", how)
  if how ~= "ask-again" then return {} end
  if revenant.case ~= "broken" then self:schedule(0, "askAgain", {text = last.text}) end
  return {persist = false, continue = false}
end

function Agent:askAgain(payload)
  revenant.log("asking again", payload.text)
  self:saveMessages(payload.text)
end

-- the upstream (actor "policy")
function Agent:decide(request)
  revenant.work("400ms")
  return "ask-again"
end

return Agent
