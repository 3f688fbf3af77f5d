"""S: Shell launch scripts. One module per rule, named after it (``sNNN_rule_name.py``); helpers
shared by several rules of the family in ``_common.py``."""
