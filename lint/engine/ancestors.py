"""The nearest ancestor folder with some property, remembered for every folder the walk passed (a run asks for
thousands of files that share their parents)."""
from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Callable, TypeVar

    T = TypeVar("T")


def nearest(folder: str, memo: dict[str, T], probe: Callable[[str], T | None], missing: T) -> T:
    """``probe``'s answer for ``folder`` or its nearest ancestor where it is not None, else ``missing``."""
    seen = []
    current = folder
    found = missing
    while True:
        if current in memo:
            found = memo[current]
            break
        seen.append(current)
        hit = probe(current)
        if hit is not None:
            found = hit
            break
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for passed in seen:
        memo[passed] = found
    return found
