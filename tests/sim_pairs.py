"""Small simulator captures made in-process, in pairs that differ in one thing, for the diff's
tests (model and app)."""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from pathlib import Path

from accelview.capture import sim
from accelview.capture.sim import workloads
from accelview.model import Trace

LLM = ("tokens=6", "prompt=64")  # 6 decode steps: enough iterations for the rank test


@cache
def llm(*params: str, seed: int = 0) -> Trace:
    """The llm workload with the small defaults above and ``params`` on top."""
    with sim.session("gen5x16-141g", seed=seed) as s:
        workloads.run("llm", [*LLM, *params])
    return s.trace()


def steps(extra_op: bool = False, count: int = 6) -> None:
    """``count`` annotated steps of GEMM → activation → GEMM (an extra op after the first GEMM)."""
    dev = sim.device(0)
    for i in range(count):
        with sim.annotate(f"step {i}"):
            dev.launch("gemm", name="proj", m=512, n=4096, k=4096)
            if extra_op:
                dev.launch("elementwise", name="inserted_scale", elements=1 << 20, inputs=1)
            dev.launch("elementwise", name="activation", elements=1 << 22, inputs=1, flops_per_element=400.0)
            dev.launch("gemm", name="out", m=512, n=4096, k=4096)
            dev.synchronize()


def slow_vector_spec(tmp: Path, factor: float = 4.0) -> Path:
    """The default preset with vector units ``factor`` times slower, as a spec file in ``tmp``."""
    raw = json.loads((files("accelview.resources") / "specs" / "gen5x16-141g.json").read_text())
    raw["compute"]["vector_tflops"] = {k: v / factor for k, v in raw["compute"]["vector_tflops"].items()}
    path = tmp / "slow-vector.json"
    path.write_text(json.dumps(raw))
    return path


def stepped(spec: str | Path = "gen5x16-141g", seed: int = 0, extra_op: bool = False) -> Trace:
    """A capture of :func:`steps`."""
    with sim.session(str(spec), seed=seed) as s:
        steps(extra_op)
    return s.trace()
