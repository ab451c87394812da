"""Tensor-parallel decode: one model split over the devices of a host, two all-reduces a layer.

What to look for: every layer's attention and MLP end in an all-reduce over the host's
chip-to-chip links; the devices wait for the slowest of them at each one (skew) and then for the
transfer. Decode steps replay one graph captured on every device at once (``comm.graph``), as
inference engines do with CUDA graphs and NCCL. With ``hosts`` > 1 every host runs its own copy.

    accelview profile --workload tp-decode --param devices=8 -o tp.h5 && accelview analyze tp.h5
"""

from __future__ import annotations

import dataclasses

from accelview.capture.sim.cluster.cluster import Cluster
from accelview.capture.sim.cluster.communicator import Communicator
from accelview.capture.sim.llm import MODELS
from accelview.capture.sim.parallel import Item, tp_step


def run(cluster: Cluster, model: str = "8b", batch: int = 1, prompt: int = 512, tokens: int = 32,
        dtype: str = "bf16", graphs: bool = True, algorithm: str = "ring") -> None:
    """Prefill ``batch`` prompts of ``prompt`` tokens op by op, then decode ``tokens`` tokens, each
    step one replay per device (``graphs``) and a synchronous copy of the logits from device 0."""
    if model not in MODELS:
        raise ValueError(f"tp-decode: unknown model {model!r}; known: {', '.join(MODELS)}")
    cfg = dataclasses.replace(MODELS[model], dtype=dtype)
    for sim in cluster.hosts:
        devs = sim.devices
        comm = cluster.communicator(devs, algorithm)
        tp = len(devs)
        logits = devs[0].alloc(batch * cfg.vocab * 4, "int8")
        out = sim.host_buffer(batch * cfg.vocab * 4, "int8", pinned=True)
        with cluster.annotate("prefill", [sim.host_index]):
            _issue(comm, tp_step(cfg, batch, prompt, prompt, tp), "prefill.")
            devs[0].copy(out, logits)
        graph = None
        if graphs and tokens:
            with comm.graph("decode step") as graph:
                _issue(comm, tp_step(cfg, batch, 1, prompt + 1, tp), "decode.")
        for step in range(tokens):
            with cluster.annotate(f"decode {step}", [sim.host_index]):
                if graph is not None:
                    graph.launch(kv_len=prompt + step + 1)
                else:
                    _issue(comm, tp_step(cfg, batch, 1, prompt + step + 1, tp), "decode.")
                devs[0].copy(out, logits)  # synchronous: the host samples the next token


def _issue(comm: Communicator, items: list[Item], prefix: str) -> None:
    for item in items:
        if item[0] == "op":
            _, name, kind, shapes = item
            for dev in comm.devices:
                dev.launch(kind, name=prefix + name, **shapes)
        else:
            kind, name, nbytes = item
            getattr(comm, kind)(nbytes, name=prefix + name)


if __name__ == "__main__":
    run(Cluster(devices=8))
