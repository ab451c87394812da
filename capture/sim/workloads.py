"""Built-in workloads: ordinary scripts against the runtime API, each showing one bottleneck.

Each is an example script in resources/examples/ that a user can copy (``accelview profile
resources/examples/llm.py``); its ``run`` function runs on the current session
(``sim.session(...)``) and takes keyword params with defaults. :func:`run` here looks one up by
name and converts ``KEY=VALUE`` strings to the defaults' types, as ``accelview profile
--workload NAME --param KEY=VALUE`` does.

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

import inspect
from collections.abc import Callable, Sequence
from importlib import import_module
from typing import Any


def _load() -> dict[str, Callable[..., None]]:
    """Each workload is the ``run`` function of its example script in resources/examples/."""
    return {name: import_module(f"accelview.resources.examples.{name.replace('-', '_')}").run for name in NAMES}


NAMES = ("llm", "gemm", "pageable-small", "pcie-saturate", "launch-bound", "strided-memory", "sync-heavy")
WORKLOADS: dict[str, Callable[..., None]] = _load()


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
