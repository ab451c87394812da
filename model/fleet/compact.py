"""A host's fleet extract kept compact while the client holds it with every other host's.

The client of a fleet analysis holds all the hosts' extracts until the combine has aligned and
analysed them together, so what one extract costs there is multiplied by the hosts. Its JSON form
(the sidecar's) spends a Python object on every number; ``compact`` keeps the same values in
numpy arrays instead (participation columns, busy rows, send rows, the busy profile) and shares
repeated names, about a third of the memory. ``columns`` hands one host's participations back as
the plain lists the collective matching reads, built only while that host is being matched.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from .extract import extract_capture, extract_fresh, unpack_int64

_INT_COLUMNS = ("lane", "device", "nbytes", "ranks")
_TIME_COLUMNS = ("arrival", "end")
_NAME_COLUMNS = ("name", "op")


def compact(extract: dict[str, Any]) -> dict[str, Any]:
    """``extract`` (JSON form, or already compact) with the same values held in arrays: each
    participation column an int64/float64 array (``busy`` one row per participation), each send
    key's rows an (n, 2) float64 array, the busy profile's packed ``busy_ns`` unpacked (left as it
    is when damaged: the combine shows no utilisation for it), names interned."""
    parts = dict(extract["participations"])
    for k in _INT_COLUMNS:
        parts[k] = np.asarray(parts[k], dtype=np.int64)
    for k in _TIME_COLUMNS:
        parts[k] = np.asarray(parts[k], dtype=np.float64)
    for k in _NAME_COLUMNS:
        parts[k] = [sys.intern(str(s)) for s in parts[k]]
    if "busy" in parts:
        busy = np.asarray(parts["busy"], dtype=np.float64)
        parts["busy"] = busy.reshape(len(parts["lane"]), -1) if busy.size else np.zeros((len(parts["lane"]), 0))
    sends = [[sys.intern(a), sys.intern(b), sys.intern(n), int(z), np.asarray(rows, dtype=np.float64).reshape(-1, 2)]
             for a, b, n, z, rows in extract["sends"]]
    profile = dict(extract["profile"])
    if isinstance(profile.get("busy_ns"), str):
        with contextlib.suppress(ValueError):  # a damaged strip stays: the combine shows no utilisation for it
            profile["busy_ns"] = unpack_int64(profile["busy_ns"])
    return {**extract, "host": sys.intern(extract["host"]), "participations": parts, "sends": sends,
            "profile": profile}


class Columns(Mapping[str, list]):
    """One host's participation columns as plain lists, each made when it is read (so the lists of
    only the host being matched exist at a time), with the values the JSON form had."""

    def __init__(self, parts: Mapping[str, Any]) -> None:
        self._parts = parts

    def __getitem__(self, key: str) -> list:
        value = self._parts[key]
        return value.tolist() if isinstance(value, np.ndarray) else list(value)

    def __iter__(self) -> Iterator[str]:
        return iter(self._parts)

    def __len__(self) -> int:
        return len(self._parts)


def columns(extract: Mapping[str, Any]) -> Columns:
    """``extract``'s participations as :class:`Columns` (what ``match_collectives`` reads)."""
    return Columns(extract["participations"])


def sends(extract: Mapping[str, Any]) -> dict[tuple[str, str, str, int], Any]:
    """``extract``'s sends and receives by (sender, receiver, name, bytes): their (arrival, end)
    rows as an (n, 2) array (what ``tightened_maps`` reads, row by row)."""
    return {(a, b, n, int(z)): np.asarray(rows, dtype=np.float64).reshape(-1, 2)
            for a, b, n, z, rows in extract["sends"]}


def compact_capture(path: str) -> dict[str, Any]:
    """The compact extract of the capture at ``path`` (its sidecar read or filled as JSON): the
    per-capture task of the fleet, so only arrays travel from the worker to the client."""
    return compact(extract_capture(path))


def compact_fresh(path: str) -> dict[str, Any]:
    """:func:`compact_capture` with the extract computed, the sidecar not consulted."""
    return compact(extract_fresh(path))
