"""JSON values read from a file, bounded before they are kept: a trace's metadata is printed,
exported and stored again by recursive encoders, so no input may choose how deep they go."""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 32  # containers nested deeper than this in kept metadata are replaced by a note
TOO_DEEP = f"(nested deeper than {MAX_DEPTH} levels: not kept)"


def bounded(value: Any, depth: int = MAX_DEPTH) -> Any:
    """``value`` with every list or dict nested deeper than ``depth`` levels replaced by
    ``TOO_DEEP`` (recursion as deep as ``depth`` at most, whatever the input)."""
    if isinstance(value, dict):
        if depth <= 0:
            return TOO_DEEP
        return {str(k): bounded(v, depth - 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if depth <= 0:
            return TOO_DEEP
        return [bounded(v, depth - 1) for v in value]
    return value
