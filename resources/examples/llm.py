"""Decoder-only transformer inference: upload the weights, prefill a prompt, decode token by token.

What to look for: decode steps are HBM-bandwidth-bound (every weight is read once per token),
prefill is compute-bound, and the weight upload saturates the PCIe link while the device idles.
Decode steps replay one captured graph (as inference engines use CUDA graphs), so the host's
per-launch cost stays off the device's critical path; ``graphs=false`` launches op by op.

    accelview profile resources/examples/llm.py -o llm.h5 && accelview analyze llm.h5
"""

from __future__ import annotations

import dataclasses

from accelview.capture import sim
from accelview.capture.sim.llm import MODELS, decode_ops, prefill_ops


def run(model: str = "8b", batch: int = 1, prompt: int = 512, tokens: int = 32, dtype: str = "bf16",
        upload: bool = True, graphs: bool = True, pinned: bool = True) -> None:
    """Prefill ``batch`` prompts of ``prompt`` tokens, then decode ``tokens`` tokens one step at a time,
    copying the logits back (D2H) after every step as a sampler would. ``graphs``: each decode step
    is one replay of a graph captured once (the attention reads the growing KV length). ``pinned``:
    the weights are uploaded from pinned host memory (false: pageable, staged by the driver)."""
    if model not in MODELS:
        raise ValueError(f"llm: unknown model {model!r}; known: {', '.join(MODELS)}")
    cfg = dataclasses.replace(MODELS[model], dtype=dtype)
    dev = sim.device(0)
    size = cfg.weight_bytes // cfg.parameters
    table = cfg.vocab * cfg.hidden * size
    per_layer = (cfg.weight_bytes - 2 * table) // cfg.layers
    weights = [dev.alloc(table, "int8"), *(dev.alloc(per_layer, "int8") for _ in range(cfg.layers)),
               dev.alloc(cfg.weight_bytes - 2 * table - per_layer * cfg.layers + table, "int8")]
    dev.alloc(cfg.kv_bytes_per_token() * batch * (prompt + tokens), "int8")  # the KV cache
    logits = dev.alloc(batch * cfg.vocab * 4, "int8")
    if upload:  # embedding table, one buffer per layer, final norm + LM head
        with sim.annotate("upload weights"):
            host = sim.host_buffer(max(w.nbytes for w in weights), "int8", pinned=pinned)
            for w in weights:
                dev.copy(w, host, nbytes=w.nbytes)
    out = sim.host_buffer(batch * cfg.vocab * 4, "int8", pinned=True)
    with sim.annotate("prefill"):
        for name, kind, shapes in prefill_ops(cfg, batch, prompt):
            dev.launch(kind, name=f"prefill.{name}", **shapes)
        dev.copy(out, logits)
    step_graph = None
    if graphs and tokens:
        with dev.graph("decode step") as step_graph:
            for name, kind, shapes in decode_ops(cfg, batch, prompt):
                dev.launch(kind, name=f"decode.{name}", **shapes)
    for step in range(tokens):
        with sim.annotate(f"decode {step}"):
            if step_graph is not None:
                step_graph.launch(kv_len=prompt + step + 1)
            else:
                for name, kind, shapes in decode_ops(cfg, batch, prompt + step):
                    dev.launch(kind, name=f"decode.{name}", **shapes)
            dev.copy(out, logits)  # synchronous: the host samples the next token


if __name__ == "__main__":
    run()
