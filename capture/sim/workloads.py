"""Built-in workloads: ordinary scripts against the runtime API, each showing one bottleneck.

Each function runs on the current session (``sim.session(...)``) and takes keyword params
with defaults; :func:`run` looks one up by name and converts ``KEY=VALUE`` strings to the
defaults' types, as ``accelview profile --workload NAME --param KEY=VALUE`` will.

=================  ===========================================================================
``llm``            decoder-only transformer inference: weight upload, prefill, decode loop
``gemm``           large GEMMs back to back: compute-bound
``pageable-small`` many small copies from pageable memory: host staging and latency
``pcie-saturate``  a weight upload that saturates the link while compute waits for it
``launch-bound``   thousands of tiny kernels: the device idles while the host launches
``strided-memory`` kernels walking HBM with poor access patterns
``sync-heavy``     a host synchronize after every op
=================  ===========================================================================
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from . import api
from .llm import MODELS, decode_ops, prefill_ops


def llm(model: str = "8b", batch: int = 1, prompt: int = 512, tokens: int = 32, dtype: str = "bf16",
        upload: bool = True) -> None:
    """Prefill ``batch`` prompts of ``prompt`` tokens, then decode ``tokens`` tokens one step at a time,
    copying the logits back (D2H) after every step as a sampler would."""
    if model not in MODELS:
        raise ValueError(f"llm: unknown model {model!r}; known: {', '.join(MODELS)}")
    cfg = dataclasses.replace(MODELS[model], dtype=dtype)
    dev = api.device(0)
    size = cfg.weight_bytes // cfg.parameters
    table = cfg.vocab * cfg.hidden * size
    per_layer = (cfg.weight_bytes - 2 * table) // cfg.layers
    weights = [dev.alloc(table, "int8"), *(dev.alloc(per_layer, "int8") for _ in range(cfg.layers)),
               dev.alloc(cfg.weight_bytes - 2 * table - per_layer * cfg.layers + table, "int8")]
    dev.alloc(cfg.kv_bytes_per_token() * batch * (prompt + tokens), "int8")  # the KV cache
    logits = dev.alloc(batch * cfg.vocab * 4, "int8")
    if upload:  # embedding table, one buffer per layer, final norm + LM head
        with api.annotate("upload weights"):
            host = api.host_buffer(max(w.nbytes for w in weights), "int8", pinned=True)
            for w in weights:
                dev.copy(w, host, nbytes=w.nbytes)
    out = api.host_buffer(batch * cfg.vocab * 4, "int8", pinned=True)
    with api.annotate("prefill"):
        for name, kind, shapes in prefill_ops(cfg, batch, prompt):
            dev.launch(kind, name=f"prefill.{name}", **shapes)
        dev.copy(out, logits)
    for step in range(tokens):
        with api.annotate(f"decode {step}"):
            for name, kind, shapes in decode_ops(cfg, batch, prompt + step):
                dev.launch(kind, name=f"decode.{name}", **shapes)
            dev.copy(out, logits)  # synchronous: the host samples the next token


def gemm(m: int = 8192, n: int = 8192, k: int = 8192, iters: int = 20, dtype: str = "bf16") -> None:
    """``iters`` GEMMs of m x n x k back to back, then one synchronize."""
    dev = api.device(0)
    for _ in range(iters):
        dev.launch("gemm", m=m, n=n, k=k, dtype=dtype)
    dev.synchronize()


def pageable_small(count: int = 2000, nbytes: int = 65536) -> None:
    """``count`` synchronous H2D copies of ``nbytes`` from pageable memory, each followed by a small op."""
    dev = api.device(0)
    src, dst = api.host_buffer(nbytes, "int8", pinned=False), dev.alloc(nbytes, "int8")
    for _ in range(count):
        dev.copy(dst, src)
        dev.launch("elementwise", elements=max(1, nbytes // 2))
    dev.synchronize()


def pcie_saturate(nbytes: int = 8 << 30, chunks: int = 16, m: int = 4096) -> None:
    """Upload ``nbytes`` of weights in ``chunks`` on a copy stream; the compute stream waits for each
    chunk's event and then runs a GEMM over it, so compute mostly waits for PCIe."""
    dev = api.device(0)
    size = nbytes // chunks
    host = api.host_buffer(size, "int8", pinned=True)
    copy_stream, compute = dev.stream(), dev.stream()
    for _ in range(chunks):
        dev.copy(dev.alloc(size, "int8"), host, stream=copy_stream)
        compute.wait_event(copy_stream.record_event())
        dev.launch("gemm", stream=compute, m=m, n=4096, k=max(1, size // (2 * 4096)))
    dev.synchronize()


def launch_bound(count: int = 5000, elements: int = 4096) -> None:
    """``count`` tiny elementwise kernels: each runs in about a microsecond, launches cost more."""
    dev = api.device(0)
    for _ in range(count):
        dev.launch("elementwise", elements=elements)
    dev.synchronize()


def strided_memory(count: int = 200, elements: int = 1 << 24, run_bytes: int = 32,
                   pattern: str = "strided") -> None:
    """``count`` elementwise kernels walking HBM in ``pattern`` runs of ``run_bytes``, alternating with
    the same kernel on sequential data for comparison."""
    dev = api.device(0)
    for i in range(count):
        if i % 2:
            dev.launch("elementwise", name="sequential copy", elements=elements)
        else:
            dev.launch("elementwise", name=f"{pattern} copy", elements=elements, pattern=pattern,
                       run_bytes=run_bytes)
    dev.synchronize()


def sync_heavy(count: int = 500, m: int = 1024) -> None:
    """An op and a host synchronize, ``count`` times."""
    dev = api.device(0)
    for _ in range(count):
        dev.launch("gemm", m=m, n=m, k=m)
        dev.synchronize()


WORKLOADS: dict[str, Callable[..., None]] = {
    "llm": llm,
    "gemm": gemm,
    "pageable-small": pageable_small,
    "pcie-saturate": pcie_saturate,
    "launch-bound": launch_bound,
    "strided-memory": strided_memory,
    "sync-heavy": sync_heavy,
}


def _convert(workload: str, key: str, value: str, default: Any) -> Any:
    try:
        if isinstance(default, bool):
            if value.lower() not in ("1", "0", "true", "false", "yes", "no"):
                raise ValueError(value)
            return value.lower() in ("1", "true", "yes")
        if isinstance(default, int):
            return int(value, 0)
        if isinstance(default, float):
            return float(value)
        return value
    except ValueError:
        raise ValueError(f"{workload}: {key}={value!r} is not a valid {type(default).__name__}") from None


def parse_params(name: str, params: Sequence[str]) -> dict[str, Any]:
    """``["KEY=VALUE", ...]`` to keyword arguments of workload ``name``, typed like its defaults."""
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}")
    sig = inspect.signature(WORKLOADS[name])
    out: dict[str, Any] = {}
    for item in params:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"{name}: parameter {item!r} must look like KEY=VALUE")
        key = key.strip().replace("-", "_")
        if key not in sig.parameters:
            raise ValueError(f"{name}: unknown parameter {key!r}; known: {', '.join(sig.parameters)}")
        out[key] = _convert(name, key, value.strip(), sig.parameters[key].default)
    return out


def run(name: str, params: Sequence[str] | dict[str, Any] = ()) -> None:
    """Run workload ``name`` on the current session with ``params`` (strings or keyword values)."""
    kwargs = dict(params) if isinstance(params, dict) else parse_params(name, params)
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}")
    WORKLOADS[name](**kwargs)
