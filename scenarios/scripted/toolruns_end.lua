-- toolruns_end.lua: every tool run a parent starts ends. A run still
-- starting or running when the simulation ends is a sub-agent call that
-- somebody is still waiting for (a fiber awaiting runAgentTool never
-- resumes). A run whose insert rolled back with its turn (a death inside
-- the commit window) never existed: it is dropped.
local open = {}       -- "actor/run" -> {status, insert record}
local insert_txn = {} -- "actor/run" -> the transaction of its row's insert
local order = {}      -- keys in insert order (reports in a defined order)

local function is_open(s) return s == "starting" or s == "running" end

revenant.invariant("toolruns_end", {
  kinds = {"toolrun_insert", "toolrun_status", "write", "txn_rollback"},
  on_record = function(r)
    local a = r.actor or "-"
    if r.kind == "write" then
      if r.op == "toolrun_insert" then insert_txn[a .. "/" .. r.key] = r.txn end
    elseif r.kind == "txn_rollback" then
      for key, txn in pairs(insert_txn) do
        if txn == r.txn and key:sub(1, #a + 1) == a .. "/" then
          open[key] = nil
          insert_txn[key] = nil
        end
      end
    elseif r.kind == "toolrun_insert" then
      local key = a .. "/" .. r.run
      if not open[key] then order[#order + 1] = key end
      open[key] = {status = r.status, insert = r}
    elseif r.kind == "toolrun_status" then
      local run = open[a .. "/" .. r.run]
      if run then run.status = r.status end
    end
  end,
  on_finish = function()
    for _, key in ipairs(order) do
      local run = open[key]
      if run and is_open(run.status) then
        revenant.violate(string.format("tool run %s, started at t=%.3fs, is still %s at the end",
                                       key, run.insert.at / 1e6, run.status), run.insert)
      end
    end
  end,
})
