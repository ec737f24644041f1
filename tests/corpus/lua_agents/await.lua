local A = {}
function A:twice()
  local h = self:runFiber("quick", function(f) return {n = 1} end)  -- ends before await
  local v = h:await()
  local h2 = self:runFiber("slow", function(f) revenant.work(100); error("boom") end)
  local ok, e = pcall(function() return h2:await() end)
  return {first = v.n, second = ok, err = e}
end
return A
