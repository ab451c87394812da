"""Device specs: the data files under ``resources/specs/`` and the loader that checks them.

A spec is a JSON object with a ``format`` tag, a ``name``, a ``description`` and five
sections (``compute``, ``memory``, ``pcie``, ``timing``, ``host``) whose keys are exactly the
fields of the dataclasses below. Keys carry their unit in the name (``_mhz``, ``_gb_per_s``,
``_ns``); derived properties give SI values (bytes/s, FLOP/s, Hz) for the models.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

FORMAT_TAG = "accelview-device-spec/1"
DTYPES = ("bf16", "fp8", "fp32")
_PRESET_PACKAGE = "accelview.resources"


@dataclass(frozen=True, slots=True)
class ComputeSpec:
    """Execution units and their peak throughput."""

    clock_mhz: float  # core clock: the clock hardware cycle counters count
    matrix_tflops: dict[str, float]  # dense peak of all matrix engines together, per dtype
    vector_tflops: dict[str, float]  # peak of all vector units together, per dtype
    matrix_engines: int
    vector_units: int
    collective_engines: int
    sram_mib: float  # on-chip SRAM, all engines together
    matrix_tile_m: int  # output tile one matrix engine works on (rows x cols)
    matrix_tile_m_min: int  # narrowest row tile the engines fall back to for small M
    matrix_tile_n: int
    matrix_efficiency: float  # best sustained fraction of peak on a large, well-shaped GEMM
    k_pipeline_depth: int  # K elements of pipeline fill/drain per output tile
    vector_efficiency: float


@dataclass(frozen=True, slots=True)
class MemorySpec:
    """HBM: size, bandwidth and what access patterns do to it."""

    hbm_gb: float
    hbm_gb_per_s: float
    burst_bytes: int  # smallest DRAM access
    page_bytes: int  # DRAM row: accesses within one row avoid activate/precharge
    efficiency_sequential: float  # achieved/peak for long sequential streams
    latency_ns: float  # load-to-use latency of one HBM access
    saturation_fraction: float  # fraction of engines that must be active to saturate HBM


@dataclass(frozen=True, slots=True)
class PcieSpec:
    """The PCIe link and the device's DMA engines."""

    gen: int
    lanes: int
    mps: int  # max payload size, bytes
    mrrs: int  # max read request size, bytes
    h2d_factor: float  # per-direction asymmetry: achieved/model bulk bandwidth
    d2h_factor: float
    read_round_trip_ns: float  # device read request -> first completion
    max_outstanding_reads: int  # read tags the DMA engine keeps in flight
    dma_engines: int
    descriptor_bytes: int
    max_descriptor_bytes: int  # a DMA engine splits a copy into descriptors this large


@dataclass(frozen=True, slots=True)
class TimingSpec:
    """Device clocks and fixed latencies."""

    timer_mhz: float  # the device timestamp counter (not the core clock)
    doorbell_ns: float  # host MMIO doorbell write -> command processor sees it
    op_launch_ns: float  # command processor dispatch + ramp of one op on a unit
    op_latency_floor_ns: float  # shortest an op's body can take
    interrupt_ns: float  # completion MSI-X -> host thread wakes
    jitter: float  # relative standard deviation of op durations


@dataclass(frozen=True, slots=True)
class HostSpec:
    """What the host side (CPU, driver, runtime) costs."""

    memcpy_gb_per_s: float  # pageable -> pinned staging memcpy
    staging_buffer_bytes: int  # one pinned bounce buffer
    staging_buffers: int  # bounce buffers in rotation (2 = double-buffered)
    queue_depth: int  # driver ring entries per queue; a full ring blocks the host
    launch_api_ns: float
    copy_api_ns: float
    sync_api_ns: float
    event_api_ns: float


@dataclass(frozen=True, slots=True)
class DeviceSpec:
    """One device preset, checked on load. See docs/SIMULATOR.md."""

    name: str
    description: str
    compute: ComputeSpec
    memory: MemorySpec
    pcie: PcieSpec
    timing: TimingSpec
    host: HostSpec
    source: str = ""  # the file it came from

    @property
    def clock_hz(self) -> float:
        """Core clock in Hz."""
        return self.compute.clock_mhz * 1e6

    @property
    def hbm_bytes_per_s(self) -> float:
        """Peak HBM bandwidth in bytes/s."""
        return self.memory.hbm_gb_per_s * 1e9

    @property
    def hbm_bytes(self) -> int:
        """HBM capacity in bytes."""
        return int(self.memory.hbm_gb * 1e9)

    def matrix_flops(self, dtype: str) -> float:
        """Dense peak FLOP/s of the matrix engines for ``dtype``."""
        return self.compute.matrix_tflops[_dtype_key(dtype)] * 1e12

    def vector_flops(self, dtype: str) -> float:
        """Peak FLOP/s of the vector units for ``dtype``."""
        return self.compute.vector_tflops[_dtype_key(dtype)] * 1e12

    def ridge_point(self, dtype: str = "bf16") -> float:
        """FLOP per byte above which a perfectly efficient op is compute-bound."""
        return self.matrix_flops(dtype) / self.hbm_bytes_per_s


def _dtype_key(dtype: str) -> str:
    if dtype in ("fp16", "f16", "bfloat16"):
        return "bf16"
    if dtype in ("int8", "fp8_e4m3", "fp8_e5m2"):
        return "fp8"
    if dtype in ("float32", "f32", "tf32"):
        return "fp32"
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(DTYPES)}")
    return dtype


_SECTIONS = {"compute": ComputeSpec, "memory": MemorySpec, "pcie": PcieSpec, "timing": TimingSpec,
             "host": HostSpec}
_FRACTIONS = {"matrix_efficiency", "vector_efficiency", "efficiency_sequential", "saturation_fraction",
              "h2d_factor", "d2h_factor"}


def _check_value(where: str, key: str, ftype: str, value: Any) -> Any:
    if ftype == "int":
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{where}.{key} must be a positive integer, got {value!r}")
        return value
    if ftype == "float":
        if not isinstance(value, int | float) or isinstance(value, bool) or not value >= 0:
            raise ValueError(f"{where}.{key} must be a non-negative number, got {value!r}")
        if key in _FRACTIONS and not 0 < value <= 1:
            raise ValueError(f"{where}.{key} must be in (0, 1], got {value!r}")
        return float(value)
    # dict[str, float]: FLOP/s per dtype
    if not isinstance(value, dict) or set(value) != set(DTYPES):
        raise ValueError(f"{where}.{key} must give exactly {', '.join(DTYPES)}, got {value!r}")
    return {d: _check_value(f"{where}.{key}", d, "float", v) for d, v in value.items()}


def _build_section(name: str, cls: type, raw: Any) -> Any:
    if not isinstance(raw, dict):
        raise ValueError(f"section {name!r} must be an object")
    fields = {f.name: str(f.type).split("[")[0] for f in dataclasses.fields(cls)}
    missing = sorted(set(fields) - set(raw))
    unknown = sorted(set(raw) - set(fields))
    if missing:
        raise ValueError(f"{name}: missing {', '.join(missing)}")
    if unknown:
        raise ValueError(f"{name}: unknown key(s) {', '.join(unknown)}")
    return cls(**{k: _check_value(name, k, fields[k], raw[k]) for k in fields})


def parse_spec(raw: Any, source: str = "<spec>") -> DeviceSpec:
    """Check a decoded JSON object and build a :class:`DeviceSpec`.

    Raises ``ValueError("<source>: <problem>")`` on the first problem found.
    """
    try:
        if not isinstance(raw, dict):
            raise ValueError("top level must be a JSON object")
        if raw.get("format") != FORMAT_TAG:
            raise ValueError(f"format must be {FORMAT_TAG!r}, got {raw.get('format')!r}")
        for key in ("name", "description"):
            if not isinstance(raw.get(key), str) or not raw[key]:
                raise ValueError(f"{key!r} must be a non-empty string")
        unknown = sorted(set(raw) - set(_SECTIONS) - {"format", "name", "description"})
        if unknown:
            raise ValueError(f"unknown key(s) {', '.join(unknown)}")
        sections = {name: _build_section(name, cls, raw.get(name)) for name, cls in _SECTIONS.items()}
        spec = DeviceSpec(name=raw["name"], description=raw["description"], source=source, **sections)
        _check_consistency(spec)
        return spec
    except ValueError as exc:
        raise ValueError(f"{source}: {exc}") from None


def _check_consistency(spec: DeviceSpec) -> None:
    p = spec.pcie
    if p.gen not in (3, 4, 5):
        raise ValueError(f"pcie.gen must be 3, 4 or 5, got {p.gen}")
    if p.lanes not in (1, 2, 4, 8, 16):
        raise ValueError(f"pcie.lanes must be 1, 2, 4, 8 or 16, got {p.lanes}")
    for key in ("mps", "mrrs"):
        v = getattr(p, key)
        if v not in (128, 256, 512, 1024, 2048, 4096):
            raise ValueError(f"pcie.{key} must be a power of two from 128 to 4096, got {v}")
    if p.max_descriptor_bytes < p.mrrs:
        raise ValueError("pcie.max_descriptor_bytes must be at least pcie.mrrs")


def _preset_dir() -> Any:
    return resources.files(_PRESET_PACKAGE).joinpath("specs")


def list_presets() -> list[str]:
    """Names of the bundled presets, sorted."""
    return sorted(p.name[:-5] for p in _preset_dir().iterdir() if p.name.endswith(".json"))


def load_spec(name_or_path: str | Path) -> DeviceSpec:
    """Load a bundled preset by name, or a spec file by path.

    A string without a path separator or ``.json`` suffix is a preset name. Raises
    ``ValueError`` naming the file and the problem for unreadable, malformed or invalid
    specs, and for unknown preset names.
    """
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or "/" in text or text.endswith(".json"):
        path = Path(name_or_path)
        try:
            data = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"{path}: cannot read spec file ({exc.strerror or exc})") from None
        source = str(path)
    else:
        entry = _preset_dir().joinpath(f"{text}.json")
        if not entry.is_file():
            raise ValueError(f"{text}: no such device preset; known: {', '.join(list_presets())}")
        data = entry.read_text(encoding="utf-8")
        source = f"preset {text}"
    try:
        raw = json.loads(data)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{source}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    return parse_spec(raw, source)
