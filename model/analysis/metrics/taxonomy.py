"""The counter taxonomy: base counters (what the hardware reports) and derived metrics (data:
expressions over base counters, other metrics and device-spec constants), like perf's
MetricExpr. Definitions live in resources/metrics.json; this module checks and evaluates them.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from ..link import bulk_bandwidth, tlp_bandwidth
from .expr import ExprError, Node, Value, evaluate, names, parse
from .units import Unit, UnitError

SPECIAL = {"duration": Unit.parse("s")}  # seconds the counters accumulated over


@dataclass(frozen=True)
class BaseCounter:
    """A counter the hardware reports."""

    name: str
    unit: str
    block: str
    description: str
    scope: str  # "op": per dispatched op; "sampled": per unit at a period; "both"
    kind: str  # "delta": amount per interval; "gauge": a level
    aliases: tuple[str, ...] = ()  # counter track names (glob patterns) that report it, device prefix aside

    def matches(self, track_name: str) -> bool:
        """True when a counter track of this name reports this base counter."""
        name = track_name.lower()
        return name == self.name or any(fnmatch.fnmatch(name, f"*{a.lower()}") for a in self.aliases)


@dataclass(frozen=True)
class Constant:
    """A device-spec figure the metrics refer to."""

    name: str
    unit: str
    description: str
    spec: str = ""  # dotted path into the device spec
    scale: float = 1.0
    computed: str = ""  # or a figure computed from the spec (pcie_h2d, pcie_d2h)


@dataclass(frozen=True)
class Metric:
    """A derived metric: an expression and the unit it is shown in."""

    name: str
    expr: str
    unit: str
    group: str
    description: str
    peak: float | None = None
    threshold: float | None = None


class MetricRegistry:
    """All base counters, constants and metrics, checked once when loaded."""

    def __init__(self, data: Mapping[str, Any], source: str = "metrics") -> None:
        self.source = source
        try:
            self.counters = {c["name"]: BaseCounter(**{**c, "aliases": tuple(c.get("aliases", ()))})
                             for c in data["base_counters"]}
            self.constants = {c["name"]: Constant(**c) for c in data["constants"]}
            self.metrics = {m["name"]: Metric(**m) for m in data["metrics"]}
        except (KeyError, TypeError) as e:
            raise ExprError(f"{source}: malformed metric definitions ({e})") from None
        self._trees: dict[str, Node] = {}
        self._units: dict[str, Unit] = {}
        for m in self.metrics.values():
            self._check(m.name, [])

    @classmethod
    def load(cls, path: str | Path | None = None) -> MetricRegistry:
        """Load definitions from ``path`` (default: the shipped resources/metrics.json)."""
        source = str(path or "resources/metrics.json")
        try:
            text = Path(path).read_text() if path else (files("accelview.resources") / "metrics.json").read_text()
            data = json.loads(text)
        except OSError as e:
            raise ExprError(f"{source}: cannot read: {e.strerror or e}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ExprError(f"{source}: not valid JSON ({e})") from None
        if not isinstance(data, dict):
            raise ExprError(f"{source}: expected a JSON object of metric definitions")
        return cls(data, source)

    def unit_of(self, name: str) -> Unit:
        """The base-unit dimension of a counter, constant or metric."""
        if name in SPECIAL:
            return SPECIAL[name]
        if name in self.counters:
            return Unit.parse(self.counters[name].unit)
        if name in self.constants:
            return Unit.parse(self.constants[name].unit)
        if name in self.metrics:
            return self._units[name]
        raise ExprError(f"{self.source}: unknown name {name!r}")

    def _check(self, name: str, stack: list[str]) -> None:
        if name in self._units:
            return
        if name in stack:
            raise ExprError(f"{self.source}: metric {name!r} depends on itself ({' → '.join([*stack, name])})")
        m = self.metrics[name]
        try:
            tree = parse(m.expr)
            for dep in names(tree):
                if dep in self.metrics:
                    self._check(dep, [*stack, name])
                elif dep not in self.counters and dep not in self.constants and dep not in SPECIAL:
                    raise ExprError(f"unknown name {dep!r}")
            _, unit = evaluate(tree, lambda n: (1.0, self.unit_of(n)))
            declared = Unit.parse(m.unit)
        except (ExprError, UnitError) as e:
            raise ExprError(f"{self.source}: metric {name!r}: {e}") from None
        if not unit.same_dimension(declared):
            raise ExprError(f"{self.source}: metric {name!r} computes {unit} but is declared in {m.unit}")
        self._trees[name] = tree
        self._units[name] = unit

    def inputs_of(self, metric: str) -> set[str]:
        """The base counters a metric needs, directly or through other metrics."""
        out: set[str] = set()
        for n in names(self._trees[metric]):
            if n in self.metrics:
                out |= self.inputs_of(n)
            elif n in self.counters:
                out.add(n)
        return out

    def evaluate(self, metric: str, counters: Mapping[str, np.ndarray | float], duration_s: np.ndarray | float,
                 constants: Mapping[str, float]) -> np.ndarray | float:
        """Evaluate ``metric`` vectorised, in its declared unit (``%`` metrics come out 0-100).

        ``counters`` holds base counters in their own units; ``constants`` in base units
        (see ``device_constants``). Missing inputs raise ExprError naming them."""
        def resolve(n: str) -> Value:
            if n == "duration":
                return duration_s, SPECIAL[n]
            if n in self.metrics:
                v = self._raw(n, resolve)
                return v, self._units[n]
            if n in self.counters:
                if n not in counters:
                    raise ExprError(f"metric {metric!r} needs counter {n!r}, which this capture does not have")
                u = Unit.parse(self.counters[n].unit)
                return np.asarray(counters[n], dtype=float) * u.scale, Unit(u.dims)
            if n not in constants:
                raise ExprError(f"metric {metric!r} needs {n!r}, which the device spec does not give")
            return constants[n], Unit(Unit.parse(self.constants[n].unit).dims)

        return self._raw(metric, resolve) / Unit.parse(self.metrics[metric].unit).scale

    def _raw(self, metric: str, resolve: Any) -> np.ndarray | float:
        return evaluate(self._trees[metric], resolve)[0]


def device_constants(registry: MetricRegistry, spec: Mapping[str, Any] | None) -> dict[str, float]:
    """The registry's constants for one device spec, in base units; absent figures are left out."""
    out: dict[str, float] = {}
    if not spec:
        return out
    for c in registry.constants.values():
        value: Any
        if c.computed:
            p = spec.get("pcie", {})
            if not all(k in p for k in ("gen", "lanes", "mps")):
                continue
            what, direction = c.computed.split("_")
            rate = tlp_bandwidth if what == "wire" else bulk_bandwidth
            value = rate(p["gen"], p["lanes"], p["mps"], direction) * p.get(f"{direction}_factor", 1.0)
        else:
            value = spec
            for part in c.spec.split("."):
                value = value.get(part) if isinstance(value, Mapping) else None
            if not isinstance(value, int | float):
                continue
            value = value * c.scale
        out[c.name] = float(value) * Unit.parse(c.unit).scale
    return out
