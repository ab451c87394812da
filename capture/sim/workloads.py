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

Cluster workloads run on a :class:`~.cluster.cluster.Cluster` of ``hosts`` × ``devices`` (two
more parameters, defaults below) that :func:`run_cluster` makes; their ``run`` takes it first:

=================  ===========================================================================
``tp-decode``      tensor-parallel decode over a host's devices (1 × 8)
``pp-hosts``       pipeline-parallel prefill over hosts, send/recv between stages (4 × 1)
``dp-straggler``   data-parallel replicas, one device or host late (4 × 8)
=================  ===========================================================================
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cluster.cluster import Cluster


def _load() -> dict[str, Callable[..., None]]:
    """Each workload is the ``run`` function of its example script in resources/examples/."""
    return {name: import_module(f"accelview.resources.examples.{name.replace('-', '_')}").run for name in NAMES}


NAMES = ("llm", "gemm", "pageable-small", "pcie-saturate", "launch-bound", "strided-memory", "sync-heavy")
WORKLOADS: dict[str, Callable[..., None]] = _load()
# every host's own clock (capture/sim/clocks): drift within ±drift_ppm (its devices' counters too, against
# their host), PCIe read jitter (mean each way)
CLOCK_PARAMS = {"drift_ppm": 30.0, "jitter_ns": 150.0}
# one host's clock steps forward (NTP sets it) by step_us at step_at of its run (0 … 1); step_host -1: none
STEP_PARAMS = {"step_host": -1, "step_us": 1000.0, "step_at": 0.5}
CLUSTER_SHAPES = {"tp-decode": (1, 8), "pp-hosts": (4, 1), "dp-straggler": (4, 8)}  # default (hosts, devices)
CLUSTER_WORKLOADS: dict[str, Callable[..., None]] = {
    name: import_module(f"accelview.resources.examples.{name.replace('-', '_')}").run for name in CLUSTER_SHAPES}


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


def _defaults(name: str) -> dict[str, Any]:
    """Workload ``name``'s parameters and their defaults (a cluster workload's with its shape)."""
    if name in CLUSTER_WORKLOADS:
        hosts, devices = CLUSTER_SHAPES[name]
        sig = inspect.signature(CLUSTER_WORKLOADS[name])
        return {"hosts": hosts, "devices": devices, **CLOCK_PARAMS, **STEP_PARAMS,
                **{k: p.default for k, p in sig.parameters.items() if k != "cluster"}}
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; known: {', '.join([*WORKLOADS, *CLUSTER_WORKLOADS])}")
    return {k: p.default for k, p in inspect.signature(WORKLOADS[name]).parameters.items()}


def parse_params(name: str, params: Sequence[str]) -> dict[str, Any]:
    """``["KEY=VALUE", ...]`` to keyword arguments of workload ``name``, typed like its defaults."""
    defaults = _defaults(name)
    out: dict[str, Any] = {}
    for item in params:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"{name}: parameter {item!r} must look like KEY=VALUE")
        key = key.strip().replace("-", "_")
        if key not in defaults:
            raise ValueError(f"{name}: unknown parameter {key!r}; known: {', '.join(defaults)}")
        out[key] = _convert(name, key, value.strip(), defaults[key])
    return out


def run_cluster(name: str, params: Sequence[str] | dict[str, Any] = (), spec: str = "gen5x16-141g", seed: int = 0,
                counter_period_ns: int = 10_000) -> Cluster:
    """Run cluster workload ``name`` with ``params`` (``hosts`` and ``devices`` among them) on a new
    :class:`~.cluster.cluster.Cluster`, finished; its ``traces()`` are the captures, one per host."""
    if name not in CLUSTER_WORKLOADS:
        raise ValueError(f"{name!r} is not a cluster workload; those are: {', '.join(CLUSTER_WORKLOADS)}")
    kwargs = dict(params) if isinstance(params, dict) else parse_params(name, params)
    hosts, devices = CLUSTER_SHAPES[name]
    hosts, devices = kwargs.pop("hosts", hosts), kwargs.pop("devices", devices)
    drift, jitter = (kwargs.pop(k, v) for k, v in CLOCK_PARAMS.items())
    step = {k: kwargs.pop(k, v) for k, v in STEP_PARAMS.items()}
    if step["step_host"] != -1 and not 0 < step["step_host"] < hosts:
        raise ValueError(f"{name}: step_host {step['step_host']} is not a host of {hosts} other than host0 "
                         "(the reference), or -1: none")
    cluster = new_cluster(hosts, devices, spec, seed, counter_period_ns, drift, jitter)
    CLUSTER_WORKLOADS[name](cluster, **kwargs)
    cluster.finish()
    if step["step_host"] > 0:
        step_host_clock(cluster, step["step_host"], step["step_us"], step["step_at"])
    return cluster


def new_cluster(hosts: int, devices: int, spec: str = "gen5x16-141g", seed: int = 0, counter_period_ns: int = 10_000,
                drift_ppm: float = CLOCK_PARAMS["drift_ppm"], jitter_ns: float = CLOCK_PARAMS["jitter_ns"]) -> Cluster:
    """A cluster whose every host and device has its own clock drawn from ``seed`` (drift within
    ±``drift_ppm``, PCIe read jitter ``jitter_ns``), as the cluster workloads run on."""
    from .clocks.hostmodel import ClusterHostClock
    from .cluster.cluster import Cluster
    from .runtime.simulator import DEVICE_DRIFT_PPM

    models = ClusterHostClock.for_cluster(hosts, devices, seed, drift_ppm, jitter_ns)
    cluster = Cluster(hosts, devices, spec, seed, counter_period_ns=counter_period_ns, clock_models=models)
    for dev in cluster.devices():  # device counters drift within ±drift_ppm of their host too
        dev.clock = dataclasses.replace(dev.clock, drift_ppm=dev.clock.drift_ppm * drift_ppm / DEVICE_DRIFT_PPM)
    return cluster


def step_host_clock(cluster: Cluster, host: int, step_us: float, step_at: float) -> int:
    """Host ``host``'s clock of a finished ``cluster`` steps forward by ``step_us`` at share
    ``step_at`` of its run (an NTP step: its captures read it, its work goes on); returns the
    unstepped raw reading at which it stepped."""
    from .clocks.hostmodel import ClusterHostClock

    if step_us < 0:  # its host lanes would run back: a capture's lanes hold their events in time order
        raise ValueError(f"step_us must be ≥ 0 (a host clock stepped back would put its capture's events out of "
                         f"order), got {step_us}")
    if not 0.0 <= step_at <= 1.0:
        raise ValueError(f"step_at must be within 0 … 1 (a share of the run), got {step_at}")
    sim = cluster.host(host)
    model = sim.clock_model
    if not isinstance(model, ClusterHostClock) or host == 0:
        raise ValueError(f"host{host}'s clock cannot step: only a cluster host's other than host0 (the reference)")
    at = sim.clock.start_ns + step_at * (sim.clock.now - sim.clock.start_ns)
    model.add_step(model.to_true(at), round(step_us * 1000))
    return round(at)


def run(name: str, params: Sequence[str] | dict[str, Any] = ()) -> None:
    """Run workload ``name`` on the current session with ``params`` (strings or keyword values)."""
    if name in CLUSTER_WORKLOADS:
        raise ValueError(f"{name} is a cluster workload: run it with run_cluster (accelview profile --workload "
                         f"{name} -o DIR/)")
    kwargs = dict(params) if isinstance(params, dict) else parse_params(name, params)
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}")
    WORKLOADS[name](**kwargs)
