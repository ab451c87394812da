"""Names that identify the same thing in two runs: a phase or an op with its numbers taken out
("decode 7" and "decode 12" are one phase family, "layers.3.qkv_proj" the family of every
layer's projection, "H2D 436224256 B" any H2D copy; digits inside a word, as in "H2D",
stay), and one shared vocabulary of them."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

_NUMBER = re.compile(r"(?<![A-Za-z0-9])\d+")  # not inside a word: H2D, fp8, sm80 stay


def family(name: str) -> str:
    """``name`` with every number (a run of digits that does not follow a letter) replaced by ``#``."""
    return _NUMBER.sub("#", name).replace("##", "#")  # ProfilerStep#12 → ProfilerStep#


class Vocabulary:
    """Family names shared by both runs, each with a small integer id."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._ids: dict[str, int] = {}

    def id(self, name: str) -> int:
        """The id of a family name, added when new."""
        i = self._ids.get(name)
        if i is None:
            i = self._ids[name] = len(self.names)
            self.names.append(name)
        return i

    def of_strings(self, strings: Any, ids: np.ndarray) -> np.ndarray:
        """Family ids of the string-table ids ``ids`` (each distinct string normalised once)."""
        if not len(ids):
            return np.empty(0, np.int64)
        table = np.full(int(ids.max()) + 1, -1, np.int64)
        for s in np.flatnonzero(np.bincount(ids)).tolist():  # each distinct string, in O(n)
            table[s] = self.id(family(strings[s]))
        return table[ids]

    def __len__(self) -> int:
        return len(self.names)
