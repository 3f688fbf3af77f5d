"""Z: Open-Reasoner-Zero. One module per rule, named after it (``zNNN_rule_name.py``); helpers
shared by several rules of the family in ``_common.py``."""
