"""V: verl. One module per rule, named after it (``vNNN_rule_name.py``); helpers
shared by several rules of the family in ``_common.py``."""
