"""The rules, one folder per family (D DeepSpeed, S shell, O OpenRLHF, V verl, Z ORZ, A accelerate/TRL, M memory,
P pins, F files) and one module per rule, named after its code and name. The registry imports them by name."""
