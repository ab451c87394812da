"""Each host's own clock as the cluster sees it: the one seam between a host's raw time (what
its simulator's host clock reads, and what its capture is written in) and the cluster's true
time (on which collectives meet and links are booked).

Until per-host clock models (offset, drift, jitter, steps) are plugged in, every host runs on
:class:`IdentityClock`. A model plugs in by being assigned to ``Simulator.clock_model`` (or
given to ``Cluster(clock_models=...)``): anything with ``to_true(raw_ns)`` and ``to_raw(true_ns)``.
"""

from __future__ import annotations

from typing import Protocol


class ClockModel(Protocol):
    """Conversions between a host's raw clock and true time, both in ns."""

    def to_true(self, raw_ns: float) -> float:
        """True time at which the host's clock reads ``raw_ns``."""

    def to_raw(self, true_ns: float) -> float:
        """What the host's clock reads at true time ``true_ns``."""


class IdentityClock:
    """A host clock that reads true time."""

    def to_true(self, raw_ns: float) -> float:
        """``raw_ns`` itself."""
        return raw_ns

    def to_raw(self, true_ns: float) -> float:
        """``true_ns`` itself."""
        return true_ns


def is_identity(model: object) -> bool:
    """Whether ``model`` reads true time (an :class:`IdentityClock`, or a model that says so)."""
    return type(model) is IdentityClock or getattr(model, "identity", False) is True
