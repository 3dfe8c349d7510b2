"""(being written)"""

RULES = ()
