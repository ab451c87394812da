"""Interned strings: every name, category, unit and key in a trace is an int32 id into one table."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np


class StringTable:
    """An append-only table of unique strings; id 0 is always the empty string."""

    __slots__ = ("_ids", "_strings")

    def __init__(self, strings: Iterable[str] = ()) -> None:
        self._strings: list[str] = [""]
        self._ids: dict[str, int] = {"": 0}
        for s in strings:
            self.intern(s)

    def intern(self, s: str) -> int:
        """Return the id of ``s``, adding it if it is new."""
        i = self._ids.get(s)
        if i is None:
            i = len(self._strings)
            self._strings.append(s)
            self._ids[s] = i
        return i

    def intern_many(self, strings: list[str]) -> list[int]:
        """The ids of ``strings`` (``intern`` of each; one dictionary look-up each when known)."""
        get = self._ids.get
        ids = [get(s, -1) for s in strings]
        if -1 in ids:
            ids = [i if i >= 0 else self.intern(s) for i, s in zip(ids, strings, strict=True)]
        return ids

    def lookup(self, s: str) -> int:
        """The id of ``s``, or -1 when the table does not hold it."""
        return self._ids.get(s, -1)

    def __getitem__(self, i: int) -> str:
        return self._strings[int(i)]

    def __len__(self) -> int:
        return len(self._strings)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StringTable) and self._strings == other._strings

    def __hash__(self) -> int:  # mutable: identity hash like list's absence of one
        raise TypeError("StringTable is unhashable")

    def strings(self) -> list[str]:
        """All strings in id order (a copy)."""
        return list(self._strings)

    def to_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Encode as one UTF-8 byte blob and int64 end offsets (the on-disk form)."""
        return encode_strings(self._strings)

    @classmethod
    def from_arrays(cls, blob: np.ndarray, offsets: np.ndarray) -> StringTable:
        """Decode the on-disk form; raises ValueError when it is inconsistent."""
        raw = blob.tobytes()
        ends = offsets.tolist()
        if ends and (ends[-1] != len(raw) or any(b < a for a, b in zip([0, *ends], ends, strict=False))):
            raise ValueError("string table offsets do not match its data")
        table = cls.__new__(cls)
        starts = [0, *ends[:-1]]
        table._strings = [raw[a:b].decode("utf-8") for a, b in zip(starts, ends, strict=True)]
        if not table._strings or table._strings[0] != "":
            raise ValueError("string table does not start with the empty string")
        table._ids = {s: i for i, s in enumerate(table._strings)}
        if len(table._ids) != len(table._strings):
            raise ValueError("string table holds duplicate strings")
        return table


def valid_text(s: str) -> str:
    """``s`` as text UTF-8 can hold: a name that is not (the lone surrogates ``os.fsdecode`` makes
    of a non-UTF-8 file name or argument) with its bytes escaped (``\\xff``), other lone
    surrogates as ``\\udXXX``; valid text unchanged."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        pass
    try:  # surrogateescape's own: back to the bytes they stood for, which are then escaped
        return s.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return s.encode("utf-8", "backslashreplace").decode("utf-8")


def valid_texts(value: Any) -> Any:
    """``value`` (plain data: dicts, lists, tuples, strings, numbers) with every string and key
    made :func:`valid_text`."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {valid_texts(k): valid_texts(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [valid_texts(v) for v in value]
    return value


def encode_strings(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """UTF-8 encode strings into one uint8 blob and the int64 end offset of each. A string UTF-8
    cannot hold is stored escaped (:func:`valid_text`; never an error that loses the capture),
    kept distinct from the others by its id when its escaped form is taken."""
    try:
        encoded = [s.encode("utf-8") for s in strings]
    except UnicodeEncodeError:
        encoded = _escaped(strings)
    blob = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    offsets = np.cumsum([len(b) for b in encoded], dtype=np.int64)
    return blob, offsets


def _escaped(strings: list[str]) -> list[bytes]:
    seen = set(strings)
    out = []
    for i, s in enumerate(strings):
        t = valid_text(s)
        if t is not s:
            while t in seen:  # the escaped form is another string of the table
                t = f"{t} #{i}"
            seen.add(t)
        out.append(t.encode("utf-8"))
    return out
