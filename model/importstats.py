"""Import statistics, as Perfetto's trace processor keeps them: where a format allows partial
trust, a reader counts what it could not take (malformed events, timestamps out of range, args
that do not decode) in ``trace.metadata["import_stats"]`` and loads the rest. This module
tells those problem counts from the plain counts of what was imported, for ``accelview info``
and the app."""

from __future__ import annotations

from typing import Any

IMPORTED = frozenset({"events", "slices", "flows", "instants", "counter_samples", "async_slices", "correlation_flows"})
# Normal in real traces, not damage: PyTorch repeats metadata, and its ac2g flow events are
# replaced by flows built from correlation ids; a flow whose end comes first is kept as written.
ROUTINE = frozenset({"duplicate_metadata_events", "skipped_metadata_events", "flows_ending_before_start"})
ROUTINE_PREFIXES = ("flow_events_replaced_",)


def import_problems(metadata: dict[str, Any]) -> dict[str, int]:
    """The non-zero counts of input the reader skipped, clamped or could not read, by reason."""
    stats = metadata.get("import_stats")
    if not isinstance(stats, dict):
        return {}
    return {k: v for k, v in sorted(stats.items())
            if isinstance(v, int) and not isinstance(v, bool) and v > 0 and k not in IMPORTED
            and k not in ROUTINE and not k.startswith(ROUTINE_PREFIXES)}


def describe_problems(problems: dict[str, int]) -> str:
    """One line: ``"3 malformed events, 1 timestamps out of range"`` ("" for none)."""
    return ", ".join(f"{v:,} {k.replace('_', ' ')}" for k, v in problems.items())
