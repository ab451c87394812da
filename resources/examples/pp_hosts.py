"""Pipeline-parallel prefill over hosts: each host holds a contiguous slice of the layers and
passes each micro-batch's activations to the next host with send/recv over the network.

What to look for: the pipeline fills and drains (the first host idles at the end, the last at the
start); between stages each micro-batch crosses the network (the NIC lanes), and a stage waits
for its input (idle time whose cause is ``communication``). With ``devices`` > 1 each stage is
also tensor-parallel over its host's devices (all-reduces on the chip-to-chip links).

    accelview profile --workload pp-hosts --param hosts=4 -o pp/
"""

from __future__ import annotations

import dataclasses
import itertools

from accelview.capture.sim.cluster.cluster import Cluster
from accelview.capture.sim.device.ops import DTYPE_BYTES
from accelview.capture.sim.llm import MODELS
from accelview.capture.sim.parallel import tp_layer


def run(cluster: Cluster, model: str = "8b", microbatches: int = 8, batch: int = 1, prompt: int = 512,
        dtype: str = "bf16") -> None:
    """Prefill ``microbatches`` micro-batches of ``batch`` prompts of ``prompt`` tokens through a
    pipeline of one stage per host (GPipe-style, forward only)."""
    if model not in MODELS:
        raise ValueError(f"pp-hosts: unknown model {model!r}; known: {', '.join(MODELS)}")
    cfg = dataclasses.replace(MODELS[model], dtype=dtype)
    stages = cluster.hosts
    if len(stages) > cfg.layers:
        raise ValueError(f"pp-hosts: {len(stages)} stages for {cfg.layers} layers")
    bounds = [round(i * cfg.layers / len(stages)) for i in range(len(stages) + 1)]
    tp = [cluster.communicator(sim.devices) for sim in stages]
    width = len(stages[0].devices)
    links = [[cluster.communicator([a.devices[d], b.devices[d]]) for d in range(width)]
             for a, b in itertools.pairwise(stages)]
    sends = [{d: dev.stream() for d, dev in enumerate(sim.devices)} for sim in stages]
    act = batch * prompt * cfg.hidden * DTYPE_BYTES[dtype]
    for m in range(microbatches):
        for h, sim in enumerate(stages):
            with cluster.annotate(f"micro-batch {m}", [h]):
                for i in range(bounds[h], bounds[h + 1]):
                    for item in tp_layer(cfg, i, batch, prompt, prompt, width):
                        if item[0] == "op":
                            _, name, kind, shapes = item
                            for dev in sim.devices:
                                dev.launch(kind, name=name, **shapes)
                        else:
                            getattr(tp[h], item[0])(item[2], name=item[1])
                if h + 1 < len(stages):  # hand the activations on, from a stream of their own
                    for d, dev in enumerate(sim.devices):
                        sends[h][d].wait_event(dev.default_stream.record_event())
                        nxt = stages[h + 1].devices[d]
                        links[h][d].send(0, 1, act, streams=[sends[h][d], nxt.default_stream],
                                         name=f"activations {m}")
    cluster.synchronize()


if __name__ == "__main__":
    run(Cluster(hosts=4))
