-- orders.lua: a fiber that charges a batch of orders and records them in
-- the agent's own tables. The orders table is the fiber's state: a
-- recovered run skips the orders already charged. The "broken" case trusts
-- nothing it wrote and charges the whole batch again.
local ORDERS = {"o1", "o2", "o3"}

local Agent = {}

local function charge_all(self)
  return function(fiber)
    for _, id in ipairs(ORDERS) do
      local row = self.sql:exec("SELECT status FROM orders WHERE id = ?", id)[1]
      if revenant.case == "broken" or not row or row.status ~= "charged" then
        revenant.work(800) -- the payment provider's round trip
        revenant.effect("charge", id)
        self.sql:exec("INSERT INTO charges(order_id, at) VALUES (?, ?)", id, revenant.now())
        self.sql:exec("INSERT INTO orders(id, status) VALUES (?, 'charged') "
                      .. "ON CONFLICT(id) DO UPDATE SET status = 'charged'", id)
        fiber:stash({last = id})
      end
    end
    return #ORDERS
  end
end

function Agent:onStart()
  self.sql:exec("CREATE TABLE IF NOT EXISTS orders(id TEXT PRIMARY KEY, status TEXT NOT NULL)")
  self.sql:exec("CREATE TABLE IF NOT EXISTS charges(order_id TEXT NOT NULL, at INTEGER NOT NULL)")
end

function Agent:checkout()
  self:runFiber("charge", charge_all(self))
  return "accepted"
end

function Agent:onFiberRecovered(ctx)
  if ctx.name == "charge" then self:runFiber("charge", charge_all(self)) end
end

return Agent
