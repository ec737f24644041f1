return {
  onStart = function(self)
    local x = = 1
  end
}
