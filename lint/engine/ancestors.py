"""The nearest ancestor folder with some property, remembered for every folder the walk passed (a run asks for
thousands of files that share their parents), up to MAX_MEMO folders."""
from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only; importing typing costs ~2 ms of every start
    from typing import Callable, TypeVar

    T = TypeVar("T")


MAX_MEMO = 4096  # folders a memo remembers; then it starts over (a walk is depth-first: recent folders are asked)


def remember(memo: dict, key, value) -> None:
    """``memo[key] = value``, the memo emptied first when full: memory stays flat in the number of folders."""
    if len(memo) >= MAX_MEMO:
        memo.clear()
    memo[key] = value


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
        remember(memo, passed, found)
    return found
