"""Configuration: ``[tool.rlhf-lint]`` in the nearest pyproject.toml, or rlhf-lint.toml / .rlhf-lint.toml.

Command-line options override the file. Hardware and framework versions live here so rules never guess silently.
"""
from __future__ import annotations

import os
import re
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Any

from rlhf_lint.engine.ancestors import nearest
from rlhf_lint.startup.records import field, record
from rlhf_lint.model import HARDWARE_KEYS, Severity, in_range
from rlhf_lint.startup.lazyre import lazy_compile

CONFIG_FILES = ("rlhf-lint.toml", ".rlhf-lint.toml", "pyproject.toml")
MAX_CONFIG_BYTES = 1 << 20  # a configuration file larger than this is refused, not read

_SIZE_RE = lazy_compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgtp]?)(i?)b?\s*$", re.IGNORECASE)
_UNITS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}

VERSION_KEYS = (
    "openrlhf-version",
    "deepspeed-version",
    "vllm-version",
    "verl-version",
    "orz-version",
    "transformers-version",
    "torch-version",
    "trl-version",
    "accelerate-version",
    "peft-version",
)
LIST_KEYS = ("select", "ignore", "extend-select", "exclude", "extend-exclude")
# a checkout of a fork or of unreleased code, read statically instead of a release table (frameworks/forks.py)
SOURCE_KEYS = ("openrlhf-source", "verl-source", "deepspeed-source")
BOOL_KEYS = ("respect-gitignore", "force-exclude")
KNOWN_KEYS = (set(VERSION_KEYS) | set(HARDWARE_KEYS) | set(LIST_KEYS) | set(SOURCE_KEYS) | set(BOOL_KEYS)
              | {"per-file-ignores", "fail-on", "world-size"})


class ConfigError(Exception):
    pass


def parse_size(value: Any) -> int:
    """'80GiB', '500GB', '537 G', 80e9 -> bytes. Decimal units (GB) are 1000-based, binary (GiB) 1024-based;
    a bare unit letter (``500G``) is read as binary, like Kubernetes and Docker do."""
    if isinstance(value, bool):
        raise ConfigError(f"not a size: {value!r}")
    if isinstance(value, (int, float)):
        return int(value)
    m = _SIZE_RE.match(str(value))
    if not m:
        raise ConfigError(f"not a size: {value!r} (try '80GiB' or '500GB')")
    number, unit, binary = float(m.group(1)), m.group(2).lower(), m.group(3)
    written_b = str(value).strip().lower().endswith("b")
    base = 1024 if (binary or (unit and not written_b)) else 1000
    return int(number * base ** _UNITS[unit])


# Hardware values are checked alike wherever they are given: the configuration file and the command line refuse a
# bad one (exit 2), a script's `# rlhf-lint: hardware` comment keeps its valid values and M008 reports the others.
# ``name`` is how the value is shown: its key, or the option (--host-memory) that gave it.
def hardware_size(value: Any, name: str) -> int:
    """A memory size in bytes. It must carry its unit: a bare 512 would be 512 bytes, surely not what was meant."""
    if isinstance(value, bool) or not any(c.isalpha() for c in str(value)):
        raise ConfigError(f"{name} {value!r} has no unit: write it as {value}GiB or {value}GB")
    try:
        size = parse_size(value)
    except ConfigError:
        raise ConfigError(f"{name} {value!r}: not a size (write it as 80GiB or 500GB)") from None
    if size <= 0:
        raise ConfigError(f"{name} {value!r}: a memory size must be positive")
    if not in_range(size):
        raise ConfigError(f"{name} {value!r}: out of range for any machine")
    return size


def hardware_count(value: Any, name: str) -> int:
    """A count of GPUs or nodes: a whole number, at least 1."""
    text = str(value).strip()
    if isinstance(value, bool) or not re.fullmatch(r"[+-]?[0-9]+", text):
        raise ConfigError(f"{name} must be a whole number, got {value!r}")
    count = int(text)
    if count < 1:
        raise ConfigError(f"{name} must be at least 1, got {value!r}")
    if not in_range(count):
        raise ConfigError(f"{name} {value!r}: out of range for any launch")
    return count


def hardware_gpu(value: Any, name: str, memory_name: str, sized: bool) -> str:
    """A GPU the catalog knows, or any name when its memory is given too (``sized``; ``memory_name``: the key or
    option that gives it)."""
    gpu = str(value).strip()
    if not gpu:
        raise ConfigError(f"{name} {value!r}: name a GPU (A100-80GB, H100, RTX4090, ...)")
    if sized:
        return gpu
    from rlhf_lint.memory.catalog import close_gpu_names, resolve_gpu  # only when a GPU is named

    if resolve_gpu(gpu) is None:
        close = close_gpu_names(gpu)
        hint = f" (close: {', '.join(close)})" if close else ""
        raise ConfigError(f"{name} {value!r}: unknown GPU{hint}; name one of the catalog (A100-80GB, H100, RTX4090, "
                          f"...) or give its memory with {memory_name}")
    return gpu


_SIZES = (("gpu-memory", "gpu_memory"), ("host-memory", "host_memory"), ("container-memory", "container_memory"))
_COUNTS = (("gpus-per-node", "gpus_per_node"), ("nodes", "nodes"))


def flag(key: str) -> str:
    """The command-line option of a hardware key, as messages name it."""
    return "--" + key


@record
class Hardware:
    gpu: str | None = None
    gpu_memory: int | None = None  # bytes, overrides the catalog
    gpus_per_node: int | None = None
    host_memory: int | None = None  # bytes
    container_memory: int | None = None  # bytes
    nodes: int | None = None

    def merged(self, other: "Hardware") -> "Hardware":
        """Values of ``other`` where set, else ours."""
        return Hardware(
            **{k: (getattr(other, k) if getattr(other, k) is not None else getattr(self, k)) for k in self.__dict__}
        )

    @property
    def known(self) -> bool:
        return self.gpu is not None or self.gpu_memory is not None

    @classmethod
    def checked(cls, data: dict[str, Any], label: Any = str, gpu_memory_known: bool = False,
                ) -> tuple["Hardware", dict[str, str]]:
        """The hardware of ``data``'s valid values, and why each other value is refused (key -> message).
        ``label`` names a key in messages; ``gpu_memory_known``: a memory is given elsewhere (any GPU name goes)."""
        hw, errors = cls(), {}

        def take(key: str, attr: str, check) -> None:
            if data.get(key) is not None:
                try:
                    setattr(hw, attr, check(data[key], label(key)))
                except ConfigError as exc:
                    errors[key] = str(exc)

        for key, attr in _SIZES:
            take(key, attr, hardware_size)
        for key, attr in _COUNTS:
            take(key, attr, hardware_count)
        sized = hw.gpu_memory is not None or gpu_memory_known
        take("gpu", "gpu", lambda value, name: hardware_gpu(value, name, label("gpu-memory"), sized))
        return hw, errors

    @classmethod
    def from_mapping(cls, data: dict[str, Any], label: Any = str) -> "Hardware":
        """The hardware ``data`` gives; ConfigError for the first value that is refused."""
        hw, errors = cls.checked(data, label)
        if errors:
            raise ConfigError(next(iter(errors.values())))
        return hw


@record
class Config:
    path: str | None = None  # the file it came from
    root: str = "."
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    extend_select: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)  # globs relative to root
    respect_gitignore: bool = True
    force_exclude: bool = False  # explicitly named files are skipped too when excluded or gitignored
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    fail_on: Severity = Severity.WARNING
    hardware: Hardware = field(default_factory=Hardware)
    versions: dict[str, str] = field(default_factory=dict)  # "openrlhf" -> "0.9.5"
    sources: dict[str, str] = field(default_factory=dict)  # "openrlhf" -> absolute path of a checkout
    world_size: int | None = None
    warnings: list[str] = field(default_factory=list)
    hardware_overrides: Hardware = field(default_factory=Hardware)  # given on the command line: they win

    def hardware_for(self, declared: dict[str, Any] | None) -> Hardware:
        """The hardware a job runs on: the configuration file, then a script's own ``# rlhf-lint: hardware`` comment
        (more specific), then the command line (most explicit). The comment's valid values count; M008 reports
        the others (hardware_errors)."""
        hw = self.hardware
        if declared:
            hw = hw.merged(self._declared(declared)[0])
        return hw.merged(self.hardware_overrides)

    def hardware_errors(self, declared: dict[str, Any] | None) -> dict[str, str]:
        """Why each refused value of a ``# rlhf-lint: hardware`` comment is refused (key -> message)."""
        return self._declared(declared)[1] if declared else {}

    def _declared(self, declared: dict[str, Any]) -> tuple[Hardware, dict[str, str]]:
        return Hardware.checked(declared, gpu_memory_known=self.hardware.gpu_memory is not None)

    def version(self, package: str) -> str | None:
        return self.versions.get(package)


def _load_toml(path: str) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path}: over the {MAX_CONFIG_BYTES >> 20} MiB limit for a configuration file")
        return tomllib.loads(raw.decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 ({exc.reason})") from None
    except RecursionError:  # tomllib recurses per nested array or inline table
        raise ConfigError(f"{path}: invalid TOML: nesting too deep to read") from None
    except ValueError as exc:  # an integer over Python's int_max_str_digits
        raise ConfigError(f"{path}: invalid TOML: {str(exc).split(';')[0]}") from None
    except OSError as exc:  # missing, a directory, unreadable: the user's error, one line, never a traceback
        raise ConfigError(f"cannot read configuration file {path}: {exc.strerror or exc}") from None


def _names_rlhf_lint(path: str) -> bool:
    """Whether a pyproject.toml that could not be read as TOML has a [tool.rlhf-lint] table, by its bytes."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES)
    except OSError:
        return False
    # [ \t]*, not \s*: with MULTILINE, \s* over 200,000 blank lines is quadratic (a minute)
    return re.search(rb"^[ \t]*\[[ \t]*tool[ \t]*\.[ \t]*[\"']?rlhf-lint\b", raw, re.MULTILINE) is not None


def find_config_file(start: str, memo: dict[str, str | None] | None = None) -> str | None:
    """The nearest rlhf-lint.toml, .rlhf-lint.toml or pyproject.toml with a [tool.rlhf-lint] table. ``memo``
    (folder -> answer) saves re-reading the same pyproject.toml for every folder of a walk."""
    current = os.path.abspath(start)
    if os.path.isfile(current):
        current = os.path.dirname(current)
    return nearest(current, {} if memo is None else memo, _config_in, None)


def _config_in(folder: str) -> str | None:
    for name in CONFIG_FILES:
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate):
            if name != "pyproject.toml":
                return candidate
            try:
                if "rlhf-lint" in _load_toml(candidate).get("tool", {}):
                    return candidate
            except (ConfigError, OSError):
                if _names_rlhf_lint(candidate):
                    raise  # the configuration that applies is broken: say so rather than run without it
                continue
    return None


def _as_list(value: Any, key: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ConfigError(f"{key} must be a list of strings")


def load_config(path: str | None) -> Config:
    if path is None:
        return Config()
    data = _load_toml(path)
    table = data.get("tool", {}).get("rlhf-lint", {}) if os.path.basename(path) == "pyproject.toml" else data
    if "tool" in table and "rlhf-lint" in table.get("tool", {}):  # rlhf-lint.toml written like pyproject
        table = table["tool"]["rlhf-lint"]
    return config_from_mapping(table, path)


def config_from_mapping(table: dict[str, Any], path: str | None = None) -> Config:
    cfg = Config(path=path, root=os.path.dirname(os.path.abspath(path)) if path else os.getcwd())
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:  # a misspelt key would silently change nothing: refuse it, as ruff does
        import difflib  # only on this error path

        key = unknown[0]
        close = difflib.get_close_matches(key, sorted(KNOWN_KEYS), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        more = f" (and {', '.join(map(repr, unknown[1:]))})" if len(unknown) > 1 else ""
        raise ConfigError(f"{path or 'configuration'}: unknown key {key!r}{more} in [tool.rlhf-lint]{hint}")
    if "select" in table:
        cfg.select = _as_list(table["select"], "select")
    cfg.ignore = _as_list(table.get("ignore", []), "ignore")
    cfg.extend_select = _as_list(table.get("extend-select", []), "extend-select")
    cfg.exclude = _as_list(table.get("exclude", []), "exclude") + _as_list(table.get("extend-exclude", []), "extend-exclude")
    for key in BOOL_KEYS:
        if key in table:
            if not isinstance(table[key], bool):
                raise ConfigError(f"{path or 'configuration'}: {key} must be true or false")
            setattr(cfg, key.replace("-", "_"), table[key])
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise ConfigError("per-file-ignores must be a table of glob = [codes]")
    cfg.per_file_ignores = {str(k): _as_list(v, f"per-file-ignores.{k}") for k, v in pfi.items()}
    if "fail-on" in table:
        try:
            cfg.fail_on = Severity.parse(str(table["fail-on"]))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    try:
        cfg.hardware = Hardware.from_mapping(table)
    except ConfigError as exc:  # a wrong value would silently change or drop the memory verdicts
        raise ConfigError(f"{path or 'configuration'}: {exc}") from None
    for key in VERSION_KEYS:
        if key in table:
            cfg.versions[key[: -len("-version")]] = str(table[key]).lstrip("v")
    for key in SOURCE_KEYS:
        if key in table:
            cfg.sources[key[: -len("-source")]] = _source_path(table[key], key, cfg.root)
    if "world-size" in table:
        try:
            cfg.world_size = int(table["world-size"])
        except (TypeError, ValueError):
            raise ConfigError("world-size must be a whole number") from None
    return cfg


def _source_path(value: Any, key: str, root: str) -> str:
    """A checkout named relative to the configuration file; it must exist (a typo would silently use the tables)."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{key} must be a path to a checkout (a string)")
    path = os.path.normpath(os.path.join(root, os.path.expanduser(value)))
    if not os.path.isdir(path):
        raise ConfigError(f"{key} = {value!r}: no such folder ({path})")
    return path


class Configs:
    """The configuration of each file, as ruff resolves it: the nearest configuration file upward from the file
    itself (not from the first path of the command line), its relative settings read against its own folder; or
    one configuration for every file (``--config FILE``). ``finish`` applies the command line's overrides to each
    configuration once, as it is loaded."""

    def __init__(self, fixed: Config | None = None, finish: Any = None):
        self.fixed = fixed
        self.finish = finish or (lambda cfg: cfg)
        self._dir_file: dict[str, str | None] = {}  # folder -> its configuration file (None: none above it)
        self._loaded: dict[str | None, Config] = {}
        if fixed is not None:
            self._loaded[fixed.path] = fixed

    def for_dir(self, directory: str) -> Config:
        if self.fixed is not None:
            return self.fixed
        path = find_config_file(directory, self._dir_file)
        if path not in self._loaded:
            self._loaded[path] = self.finish(load_config(path))
        return self._loaded[path]

    def for_path(self, path: str) -> Config:
        """The configuration of a file (the folder it is in)."""
        return self.for_dir(os.path.dirname(os.path.abspath(path)))

    def loaded(self) -> list[Config]:
        return list(self._loaded.values())
