"""quick_init: a frozen dataclass made by setting its slots directly is the dataclass it was."""

from __future__ import annotations

import dataclasses

import pytest
from accelview.capture.sim.device.costs import CostTerms, OpCost, op_cost
from accelview.capture.sim.device.frozen import quick_init
from accelview.capture.sim.device.specs import load_spec


@dataclasses.dataclass(frozen=True, slots=True)
class Plain:
    a: int
    b: str = "x"
    c: float = 2.5


Quick = quick_init(dataclasses.make_dataclass("Quick", [("a", int), ("b", str, "x"), ("c", float, 2.5)],
                                              frozen=True, slots=True))


def test_quick_init_gives_the_same_object_as_the_generated_one() -> None:
    for args, kwargs in (((1,), {}), ((1, "y"), {}), ((1,), {"c": 7.0}), ((), {"a": 3, "b": "z", "c": 0.0})):
        q, p = Quick(*args, **kwargs), Plain(*args, **kwargs)
        assert dataclasses.astuple(q) == dataclasses.astuple(p)
    q = Quick(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.a = 2  # type: ignore[misc]
    assert dataclasses.replace(q, b="w") == Quick(1, "w") and hash(q) == hash(Quick(1))
    with pytest.raises(TypeError):
        Quick()  # type: ignore[call-arg]


def test_costs_keep_their_dataclass_behaviour() -> None:
    cost = op_cost(load_spec("gen5x16-141g"), "gemm", None, m=64, n=1024, k=1024)
    cost = dataclasses.replace(cost, shape=7)
    assert cost.shape == 7 and dataclasses.replace(cost, jitter=1.1).jitter == 1.1
    assert dataclasses.replace(cost, jitter=1.1) != cost and dataclasses.replace(cost) == cost
    assert cost.counters["elapsed_cycles"] > 0
    assert [f.name for f in dataclasses.fields(CostTerms)][:3] == ["compute_ns", "memory_ns", "floor_ns"]
    assert OpCost.__init__.__qualname__ == "OpCost.__init__"


def test_quick_init_refuses_what_it_cannot_keep() -> None:
    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Factory:
        a: list = dataclasses.field(default_factory=list)

    for cls in (NoSlots, Factory):
        with pytest.raises(TypeError):
            quick_init(cls)
