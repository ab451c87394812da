"""A host's fleet extract kept compact while the client holds it with every other host's.

The client of a fleet analysis holds all the hosts' extracts until the combine has aligned and
analysed them together, so what one extract costs there is multiplied by the hosts. Its JSON form
(the sidecar's) spends a Python object on every number; ``compact`` keeps the same values in a few
numpy arrays instead (participation columns, busy rows, all the send rows in one array, the busy
profile as its steps in the narrowest integer type that holds them) and shares repeated names.
The per-capture task returns this form (``compact_capture``), so it is also what travels from a
worker. ``columns`` and ``sends`` hand the values back in the shapes the collective matching and
the clock tightening read, made only while they read them; ``moved`` places them on host0's clock.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from .extract import extract_capture, extract_fresh, unpack_int64

_INT_COLUMNS = ("lane", "device", "nbytes", "ranks")
_TIME_COLUMNS = ("arrival", "end")
_NAME_COLUMNS = ("name", "op")
_SEND_KEYS = ("sender", "receiver", "name")


def compact(extract: dict[str, Any]) -> dict[str, Any]:
    """``extract`` (JSON form; returned as it is when already compact) with the same values held
    in arrays: each participation column an int64/float64 array (``busy`` one row per
    participation), the sends as columns (``sender``, ``receiver``, ``name``, ``nbytes``, ``count``)
    with their (arrival, end) rows in one (n, 2) float64 array, the profile's packed ``busy_ns`` as
    ``busy_steps`` (left packed when damaged: the combine shows no utilisation for it), names
    interned."""
    if isinstance(extract["sends"], dict):
        return extract
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
    rows = [np.asarray(r[4], dtype=np.float64).reshape(-1, 2) for r in extract["sends"]]
    sends = {k: [sys.intern(str(r[i])) for r in extract["sends"]] for i, k in enumerate(_SEND_KEYS)}
    sends.update(nbytes=np.array([int(r[3]) for r in extract["sends"]], dtype=np.int64),
                 count=np.array([len(r) for r in rows], dtype=np.int64),
                 rows=np.concatenate(rows) if rows else np.zeros((0, 2)))
    profile = dict(extract["profile"])
    if isinstance(profile.get("busy_ns"), str):
        with contextlib.suppress(ValueError):  # a damaged strip stays: the combine shows no utilisation for it
            profile["busy_steps"] = _steps(unpack_int64(profile["busy_ns"]))
            del profile["busy_ns"]
    return {**extract, "host": sys.intern(extract["host"]), "participations": parts, "sends": sends,
            "profile": profile}


def _steps(cumulative: np.ndarray) -> np.ndarray:
    """A cumulative int64 series as its steps, in the narrowest integer type holding them all
    (``np.cumsum(steps, dtype=np.int64)`` gives it back exactly)."""
    steps = np.diff(cumulative, prepend=np.int64(0))
    if not len(steps):
        return steps
    return steps.astype(np.promote_types(np.min_scalar_type(steps.min()), np.min_scalar_type(steps.max())))


def busy_of(profile: Mapping[str, Any]) -> np.ndarray:
    """The cumulative busy ns (int64) of a profile, compact (``busy_steps``) or packed (``busy_ns``:
    ValueError, TypeError or AttributeError when damaged)."""
    if "busy_steps" in profile:
        return np.cumsum(profile["busy_steps"], dtype=np.int64)
    return unpack_int64(profile["busy_ns"])


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


def sends(extract: Mapping[str, Any]) -> dict[tuple[str, str, str, int], np.ndarray]:
    """A compact extract's sends and receives by (sender, receiver, name, bytes): their (arrival,
    end) rows as an (n, 2) array (what ``tightened_maps`` reads, row by row)."""
    s = extract["sends"]
    rows = np.split(s["rows"], np.cumsum(s["count"])[:-1]) if len(s["count"]) else []
    return {(a, b, n, z): r for a, b, n, z, r in zip(s["sender"], s["receiver"], s["name"], s["nbytes"].tolist(), rows,
                                                     strict=True)}


def moved(extract: Mapping[str, Any], place: Callable[[np.ndarray], np.ndarray]) -> dict[str, Any]:
    """A compact extract with its times moved by ``place`` (host ns → host0 ns, monotonic): its
    bounds, arrivals and ends; durations stay as the host's clock measured them (ppm apart). Its
    sends are left out: once the clocks are tightened nothing reads them."""
    parts = dict(extract["participations"])
    for k in _TIME_COLUMNS:
        parts[k] = place(parts[k]) if len(parts[k]) else parts[k]
    bounds = place(np.asarray(extract["bounds"], dtype=np.float64)).tolist()
    return {**{k: v for k, v in extract.items() if k != "sends"}, "bounds": bounds, "participations": parts}


def compact_capture(path: str) -> dict[str, Any]:
    """The compact extract of the capture at ``path`` (its sidecar read or filled as JSON): the
    per-capture task of the fleet, so only arrays travel from the worker to the client."""
    return compact(extract_capture(path))


def compact_fresh(path: str) -> dict[str, Any]:
    """:func:`compact_capture` with the extract computed, the sidecar not consulted."""
    return compact(extract_fresh(path))
