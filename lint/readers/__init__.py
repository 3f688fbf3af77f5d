"""Readers: bytes to trees with exact spans (JSON, YAML, Python, shell, pin files). They never import frameworks,
rules, fixers or the engine."""
