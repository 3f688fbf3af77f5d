"""Floating-point type names, read from schemas/precision.json (loaded on first use): the one place that says which
spellings mean bf16, fp16 or fp32, how many bytes each takes, and what accelerate's mixed_precision values mean."""
from __future__ import annotations


def _table() -> dict:
    from rlhf_lint.schemas import load

    return load("precision.json")


def normalise_dtype(value) -> str | None:
    """``"bfloat16"``, ``" torch.float32"`` -> ``"bf16"``, ``"fp32"``; None for anything else."""
    if not isinstance(value, str):
        return None
    name = value.strip().lower()
    return next((dtype for dtype, row in _table()["dtypes"].items() if name in row["names"]), None)


def dtype_bytes(value, default: int) -> int:
    """Bytes per element of a dtype spelling; ``default`` when it is not a known floating-point type."""
    dtype = normalise_dtype(value)
    return default if dtype is None else _table()["dtypes"][dtype]["bytes"]


def accelerate_dtype(value) -> str | None:
    """The parameter dtype an accelerate ``mixed_precision`` value means (``"no"`` -> ``"fp32"``); None if unknown."""
    return _table()["accelerate_mixed_precision"]["values"].get(str(value))
