"""The Python API: ``rlhf_lint.check(paths)`` and ``rlhf_lint.fix(paths)``, what the command line does, as values.

    import rlhf_lint
    for d in rlhf_lint.check(["train.sh", "configs/"], select=["D", "M"]):
        print(d.path, d.start.line, d.code, d.message)

Configuration is found per file as on the command line (the nearest rlhf-lint.toml or pyproject.toml
[tool.rlhf-lint]); ``config`` overrides it for every file: a path to a configuration file, or a mapping with the
keys of ``[tool.rlhf-lint]`` (``{"gpu": "A100-80GB", "ignore": ["P"]}``). A bad selector or configuration raises
``rlhf_lint.ConfigError``. ``import rlhf_lint`` stays cheap: this module loads on first use.
"""
from __future__ import annotations

import os

from rlhf_lint.engine.config import Config, ConfigError, Configs, config_from_mapping, load_config
from rlhf_lint.engine.runner import Options, Result, lint

__all__ = ["check", "fix", "ConfigError"]


def _configs(config) -> Configs:
    if config is None:
        return Configs()
    if isinstance(config, Config):
        return Configs(fixed=config)
    if isinstance(config, (str, os.PathLike)):
        return Configs(fixed=load_config(os.fspath(config)))
    if isinstance(config, dict):
        return Configs(fixed=config_from_mapping(config))
    raise TypeError(f"config must be None, a path, a mapping or a Config, not {type(config).__name__}")


def _run(paths, options: Options, config) -> Result:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    configs = _configs(config)
    return lint([os.fspath(p) for p in paths] or ["."], configs.for_dir(os.getcwd()), options, configs)


def _selection(select, ignore, extend_select) -> dict:
    as_list = lambda v: [v] if isinstance(v, str) else list(v or [])  # noqa: E731
    return {"select": as_list(select) if select is not None else None, "ignore": as_list(ignore),
            "extend_select": as_list(extend_select)}


def check(paths, *, select=None, ignore=None, extend_select=None, config=None) -> list:
    """The diagnostics for ``paths`` (files or folders), sorted by path and position; nothing is written.
    Each is a ``rlhf_lint.model.Diagnostic``: code, name, severity, message, path, start/end (1-based line and
    column), related locations and the optional fix."""
    return list(_run(paths, Options(**_selection(select, ignore, extend_select)), config).diagnostics)


def fix(paths, *, unsafe_fixes=False, write=True, select=None, ignore=None, extend_select=None,
        config=None) -> Result:
    """Apply the fixes (safe ones; unsafe ones too with ``unsafe_fixes``) and return the run's Result:
    ``diagnostics`` left after fixing, ``fixed`` (count), ``changed`` (path -> (old bytes, new bytes)) and
    ``write_errors``. With ``write=False`` nothing is written (the changes are only computed, like --diff)."""
    options = Options(fix=True, diff=not write, unsafe_fixes=unsafe_fixes,
                      **_selection(select, ignore, extend_select))
    return _run(paths, options, config)
