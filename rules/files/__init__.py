"""F: Files, parsing and suppressions. One module per rule, named after it (``fNNN_rule_name.py``); helpers
shared by several rules of the family in ``_common.py``."""
