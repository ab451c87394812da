"""Search by argument value, the model side of the search box's ``key=value`` and ``arg:text``
queries. Vectorised over the args table (set, key, kind, int, real, str): the rows that match
are found with column operations on unique values, then their sets map to slices. Pure numpy."""

from __future__ import annotations

import numpy as np

from ..schema import ArgKind
from ..trace import Trace

ARG_PREFIX = "arg:"
SYNTAX = "name text · key=value (an argument equal to value) · arg:text (any argument value containing text)"


def is_arg_key(trace: Trace, key: str) -> bool:
    """Whether some argument has this key (case-insensitive)."""
    a = trace.tables["args"]
    k = key.lower()
    return bool(len(a)) and bool(_ids_in(a.key, _string_mask(trace, lambda s: s == k)).any())


def parse_query(text: str) -> tuple[str, str, str]:
    """(mode, key, value) of a search: ("arg", "", text) for ``arg:text``, ("kv", key, value)
    for ``key=value`` (key without spaces), else ("name", "", text)."""
    t = text.strip()
    if t.lower().startswith(ARG_PREFIX):
        return "arg", "", t[len(ARG_PREFIX):].strip()
    key, eq, value = t.partition("=")
    if eq and key.strip() and " " not in key.strip():
        return "kv", key.strip(), value.strip()
    return "name", "", t


def _string_mask(trace: Trace, keep) -> np.ndarray:
    """A boolean per interned string id: does ``keep(lowercased text)`` hold. Indexing it with
    a column of ids is a gather, much cheaper than ``np.isin`` on millions of rows."""
    return np.array([keep(s.lower()) for s in trace.strings.strings()] + [False], bool)


def _ids_in(column: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``mask[column]``, with ids outside the mask (-1 for none) False."""
    col = np.where((column >= 0) & (column < len(mask)), column, len(mask) - 1)
    return mask[col]


NUMERIC = set("0123456789.-+e")


def _contains(values: np.ndarray, needle: str) -> np.ndarray:
    """Which numbers' text contains ``needle``: each distinct value is formatted once, in C."""
    uniq, inv = np.unique(values, return_inverse=True)
    hit = np.strings.find(uniq.astype(np.str_), needle) >= 0
    return hit[inv]


def arg_rows(trace: Trace, key: str | None, value: str, exact: bool) -> np.ndarray:
    """Rows of the args table matching: key equal to ``key`` (case-insensitive; any key when
    None) and value equal to ``value`` (``exact``: numbers numerically, text ignoring case)
    or containing it as text."""
    a = trace.tables["args"]
    n = len(a)
    if not n or not value:
        return np.empty(0, np.int64)
    needle = value.lower()
    ok = np.ones(n, bool)
    if key is not None:
        k = key.lower()
        ok &= _ids_in(a.key, _string_mask(trace, lambda s: s == k))
        if not ok.any():
            return np.empty(0, np.int64)
    kind = a.kind
    match = np.zeros(n, bool)
    is_s, is_i, is_r = kind == ArgKind.STR, kind == ArgKind.INT, kind == ArgKind.REAL
    strs = _string_mask(trace, (lambda s: s == needle) if exact else (lambda s: needle in s))
    match[is_s] = _ids_in(a.str[is_s], strs)
    if exact:
        try:
            num = float(value)
        except ValueError:
            num = None
        if num is not None:
            match[is_r] = a.real[is_r] == num
            if num.is_integer():
                match[is_i] = a.int[is_i] == int(num)
    elif set(needle) <= NUMERIC:  # only text a number could contain is looked for in numbers
        sel = np.flatnonzero(ok & is_i)
        match[sel] = _contains(a.int[sel], needle)
        sel = np.flatnonzero(ok & is_r)
        match[sel] = _contains(a.real[sel], needle)
    return np.flatnonzero(ok & match)


def find_by_args(trace: Trace, key: str | None, value: str, exact: bool) -> np.ndarray:
    """Ids of slices with an argument matching (see ``arg_rows``), ordered by start time."""
    rows = arg_rows(trace, key, value, exact)
    if not len(rows):
        return np.empty(0, np.int64)
    sets = trace.tables["args"].set[rows]
    mask = np.zeros(int(sets.max()) + 2, bool)
    mask[sets] = True
    hits = np.flatnonzero(_ids_in(trace.slices.args, mask))
    order = np.argsort(trace.slices.start_ns[hits], kind="stable")
    return hits[order].astype(np.int64)
