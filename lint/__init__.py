"""rlhf-lint: a linter and auto-fixer for LLM post-training launches.

``rlhf_lint.check(paths, select=..., config=...)`` returns the diagnostics and ``rlhf_lint.fix(paths, ...)`` applies
the fixes (rlhf_lint.api). They load on first use, so ``import rlhf_lint`` costs nothing (the console script's
start-up goes through this file)."""
__version__ = "0.1.0"

__all__ = ["check", "fix", "ConfigError", "__version__"]


def __getattr__(name):  # PEP 562: the API module (engine, readers, ...) is imported only when asked for
    if name in ("check", "fix", "ConfigError"):
        import importlib

        return getattr(importlib.import_module("rlhf_lint.api"), name)
    raise AttributeError(f"module 'rlhf_lint' has no attribute {name!r}")
