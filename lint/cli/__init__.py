"""The command line: the console entry (a fast path without click) and the commands check, estimate, env, rule(s)."""
