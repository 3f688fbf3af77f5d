"""D: DeepSpeed config. One module per rule, named after it (``dNNN_rule_name.py``); helpers
shared by several rules of the family in ``_common.py``."""
