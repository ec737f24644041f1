-- digest.lua: a cron schedule with a payload drives the agent's work, and
-- onAlarm keeps a log of the alarms that ran it.
--
--   async onStart() {
--     await this.schedule("* * * * *", "digest", { list: "daily" }, { idempotent: true });
--   }
--   async digest(payload, schedule) {
--     await buildDigest(payload.list);           // 500 ms of work
--     if (this.sql`SELECT 1 FROM sent WHERE list = ${payload.list} AND due = ${schedule.time}`.length) return;
--     this.sql`INSERT INTO sent ...`;
--     await sendEmail(payload.list, schedule.time);
--   }
--   async onAlarm() { this.sql`INSERT INTO alarms ...`; }
--
-- The first send fails once ("smtp busy"): tryN retries the callback.
-- A cron occurrence can run twice: an alarm that wakes the agent runs
-- onStart, whose schedule() re-arms the alarm 1 ms later (_scheduleNextAlarm),
-- and that second alarm() finds the row still due while the first one's
-- callback is still working (the SDK guards only interval rows with
-- `running`). The fixed digest keeps a `sent` table keyed by (list, due) and
-- sends an occurrence once; the "broken" case sends without looking.
local Agent = {}

local function tables(self)
  self.sql:exec("CREATE TABLE IF NOT EXISTS sent(list TEXT, due INTEGER, attempt INTEGER, "
                .. "PRIMARY KEY (list, due))")
  self.sql:exec("CREATE TABLE IF NOT EXISTS alarms(at INTEGER)")
end

function Agent:onStart()
  tables(self)
  self:schedule("* * * * *", "digest", {list = "daily"}, {idempotent = true})
end

function Agent:digest(payload, schedule)
  revenant.work(500) -- build the digest
  if schedule.time == 60 and schedule.attempt == 1 then error("smtp busy") end
  if revenant.case ~= "broken" and
     #self.sql:exec("SELECT 1 FROM sent WHERE list = ? AND due = ?", payload.list, schedule.time) > 0 then
    revenant.log("already sent", payload.list, schedule.time)
    return
  end
  self.sql:exec("INSERT OR REPLACE INTO sent(list, due, attempt) VALUES (?, ?, ?)", payload.list,
                schedule.time, schedule.attempt)
  revenant.effect("email", payload.list .. "@" .. schedule.time)
end

function Agent:onAlarm()
  tables(self)
  self.sql:exec("INSERT INTO alarms(at) VALUES (?)", revenant.now())
end

return Agent
