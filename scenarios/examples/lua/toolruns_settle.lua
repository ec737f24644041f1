-- toolruns_settle: no tool run stays running after its parent's recovery.
-- A run still starting or running when its parent dies is orphaned; when
-- the parent's tool-run recovery ends, every orphan must be terminal, and
-- at the end of the run no orphan may still be open (a recovery that
-- never ends leaves it open for good). A run whose insert rolled back with
-- its turn (a death inside the commit window) never existed: it is dropped.

local open = {}     -- "actor/run" -> {status, insert record}
local orphans = {}  -- list of {key, death record}, in the order they were orphaned
local told = {}
local insert_txn = {} -- "actor/run" -> the transaction of its row's insert

local function is_open(s) return s == "starting" or s == "running" end

local function check(key, o, r, why)
  local run = open[key]
  if told[key] or not run or not is_open(run.status) then return end
  told[key] = true
  if r then
    revenant.violate(string.format("tool run %s is still %s after %s", key, run.status, why),
                     run.insert, o.death, r)
  else
    revenant.violate(string.format("tool run %s, open when its parent died at t=%.3fs, is still %s at the end",
                                   key, o.death.at / 1e6, run.status), run.insert, o.death)
  end
end

revenant.invariant("toolruns_settle", {
  kinds = {"toolrun_insert", "toolrun_status", "actor_death", "toolrun_recovery", "write", "txn_rollback"},
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
      open[a .. "/" .. r.run] = {status = r.status, insert = r}
    elseif r.kind == "toolrun_status" then
      local run = open[a .. "/" .. r.run]
      if run then run.status = r.status end
    elseif r.kind == "actor_death" then
      for key, run in pairs(open) do
        if key:sub(1, #a + 1) == a .. "/" and is_open(run.status) then
          orphans[#orphans + 1] = {key = key, death = r}
        end
      end
    elseif r.phase == "end" then
      for _, o in ipairs(orphans) do
        if o.key:sub(1, #a + 1) == a .. "/" then check(o.key, o, r, "its parent's recovery ended") end
      end
    end
  end,
  on_finish = function()
    for _, o in ipairs(orphans) do check(o.key, o, nil) end
  end,
})
