-- a script saved in Latin-1: café
return {}
