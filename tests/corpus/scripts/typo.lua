return { onFiberRecoverd = function(self, ctx) end }
