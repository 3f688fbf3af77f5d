"""Frameworks: trees to Jobs. Each module knows one launcher or framework (how it reads its flags or config, its
defaults per release) and builds Jobs in the common settings vocabulary."""
