"""Text as the app and the CLI show it: a name of any length clipped before it is measured or
drawn (a 50 MB name made the timeline lay out 50 MB of glyphs: 3.5 GB and a minute per frame),
and names cut to a column's width so that different names stay told apart (kernel and phase
names often share their first 40 characters)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

MAX_SHOWN_CHARS = 500  # far more than any lane, label or panel row shows
_SEPARATORS = " _:<>(),./-"


def clip(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """``text`` cut to ``limit`` characters (the last one an ellipsis) when it is longer."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _middle(name: str, width: int) -> str:
    """The start and the end of ``name`` with an ellipsis between, ``width`` characters."""
    head = (width - 1) // 2
    return name[:head] + "…" + name[len(name) - (width - 1 - head):]


def _window(name: str, at: int, width: int) -> str:
    """The start of ``name``, an ellipsis, then ``name`` from near ``at`` (the word it falls in),
    ``width`` characters (an ellipsis last when the name goes on)."""
    head = width // 3
    rest = width - head - 1
    s = at
    while s > head and name[s - 1] not in _SEPARATORS and at - s < rest // 2:
        s -= 1
    s = max(head, min(s, len(name) - rest))
    shown = name[s:s + rest]
    if s + rest < len(name):
        shown = shown[:-1] + "…"
    return name[:head] + "…" + shown


def _common(a: str, b: str) -> int:
    """The length of the common prefix of ``a`` and ``b``."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _collisions(cuts: dict[str, str]) -> list[list[str]]:
    """The groups (sorted) of different names whose cuts are the same."""
    by: dict[str, list[str]] = defaultdict(list)
    for name, cut in cuts.items():
        by[cut].append(name)
    return [sorted(g) for g in by.values() if len(g) > 1]


def _at_group(group: list[str], width: int) -> dict[str, str]:
    """Each name shown from where the group's names first part (their common prefix)."""
    at = _common(group[0], group[-1])  # sorted: the first and last share what all share
    return {n: _window(n, at, width) if len(n) > width else n for n in group}


def _at_own(group: list[str], width: int) -> dict[str, str]:
    """Each name shown from where it parts from its nearest neighbour in sorted order."""
    out = {}
    for i, n in enumerate(group):
        at = max(_common(n, group[i - 1]) if i else 0, _common(n, group[i + 1]) if i + 1 < len(group) else 0)
        out[n] = _window(n, at, width) if len(n) > width else n
    return out


def distinct_cuts(names: Sequence[str], width: int) -> list[str]:
    """``names`` cut to at most ``width`` characters so that different names get different cuts:
    the start and the end with an ellipsis between; names that still look alike are shown from
    where they part, and, failing that, numbered (``#1``, ``#2``). Equal names get equal cuts."""
    width = max(width, 8)
    cuts = {n: n if len(n) <= width else _middle(n, width) for n in names}
    ways: list[Callable[[list[str], int], dict[str, str]]] = [_at_group, _at_own]
    for way in ways:
        for group in _collisions(cuts):
            cuts.update(way(group, width))
    for group in _collisions(cuts):
        for k, n in enumerate(group, 1):
            tag = f" #{k}"
            cuts[n] = cuts[n][:width - len(tag)] + tag
    return [cuts[n] for n in names]
