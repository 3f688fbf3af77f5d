"""P: Pins and versions. One module per rule, named after it (``pNNN_rule_name.py``); helpers
shared by several rules of the family in ``_common.py``."""
