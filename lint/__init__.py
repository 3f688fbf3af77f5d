"""rlhf-lint: a linter and auto-fixer for LLM post-training launches."""
__version__ = "0.1.0"
