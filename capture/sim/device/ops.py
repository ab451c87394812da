"""The work of each op kind: FLOPs, bytes and parallelism from its shapes and dtype.

Every op kind is a function of keyword shapes returning :class:`OpWork`; :func:`op_work`
dispatches by name and turns wrong or missing shapes into a ``ValueError`` that names the
op. Bytes are the minimum traffic (each operand read once, each result written once), as
a tiled kernel with enough on-chip SRAM achieves; matrix ops also give the GEMM shape that
decides how well they fill the matrix engines (see :mod:`.costs`).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from .frozen import quick_init
from .hbm import SEQUENTIAL, AccessPattern

UnitKind = Literal["matrix", "vector", "dma", "collective"]
DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "fp32": 4}
VECTOR_BLOCK_BYTES = 16384  # bytes one vector unit processes as one work item


@quick_init
@dataclass(frozen=True, slots=True)
class OpWork:
    """What one op has to do, independent of the device."""

    op: str
    unit: UnitKind
    dtype: str
    flops: float
    bytes_read: int
    bytes_written: int
    read_pattern: AccessPattern = SEQUENTIAL
    write_pattern: AccessPattern = SEQUENTIAL
    gemm: tuple[int, int, int, int] | None = None  # (batch, m, n, k) for matrix ops
    work_items: int = 1  # independent blocks for vector ops

    @property
    def bytes_total(self) -> int:
        """Bytes read plus bytes written."""
        return self.bytes_read + self.bytes_written

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOP per byte of useful traffic."""
        return self.flops / self.bytes_total if self.bytes_total else math.inf


def _size(dtype: str) -> int:
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(DTYPE_BYTES)}")
    return DTYPE_BYTES[dtype]


def _vector(op: str, dtype: str, flops: float, read: int, written: int, **kw: Any) -> OpWork:
    items = max(1, math.ceil((read + written) / VECTOR_BLOCK_BYTES))
    return OpWork(op, "vector", dtype, flops, read, written, work_items=items, **kw)


def gemm(m: int, n: int, k: int, batch: int = 1, dtype: str = "bf16") -> OpWork:
    """C[batch, m, n] = A[batch, m, k] @ B[k, n]; B (weights) shared across the batch."""
    s = _size(dtype)
    flops = 2.0 * batch * m * n * k
    return OpWork("gemm", "matrix", dtype, flops, (batch * m * k + k * n) * s, batch * m * n * s,
                  gemm=(batch, m, n, k))


def attention(batch: int, heads: int, head_dim: int, q_len: int, kv_len: int, kv_heads: int | None = None,
              causal: bool = True, dtype: str = "bf16") -> OpWork:
    """Fused (flash) attention of ``q_len`` new queries over ``kv_len`` cached keys/values.

    Prefill: ``q_len == kv_len``; decode: ``q_len`` 1 (or a few) over the KV cache.
    Grouped-query attention when ``kv_heads < heads``.
    """
    hk = kv_heads or heads
    if heads % hk:
        raise ValueError(f"heads ({heads}) must be a multiple of kv_heads ({hk})")
    s = _size(dtype)
    # causal: query i sees the kv_len - q_len cached keys plus i + 1 new ones
    pairs = q_len * (kv_len - q_len) + q_len * (q_len + 1) / 2 if causal else q_len * kv_len
    flops = 4.0 * batch * heads * pairs * head_dim
    read = (batch * q_len * heads * head_dim + 2 * batch * kv_len * hk * head_dim) * s
    written = batch * q_len * heads * head_dim * s
    group = heads // hk  # query heads sharing one K/V head form the rows of one tile
    return OpWork("attention", "matrix", dtype, flops, read, written,
                  gemm=(batch * hk, q_len * group, kv_len, head_dim))


def norm(tokens: int, hidden: int, kind: str = "rmsnorm", residual: bool = False,
         dtype: str = "bf16") -> OpWork:
    """RMSNorm or LayerNorm over ``hidden``, optionally fused with the residual add."""
    if kind not in ("rmsnorm", "layernorm"):
        raise ValueError(f"norm kind must be rmsnorm or layernorm, got {kind!r}")
    s = _size(dtype)
    x = tokens * hidden * s
    params = hidden * s * (1 if kind == "rmsnorm" else 2)
    flops = tokens * hidden * (4.0 if kind == "rmsnorm" else 7.0) + (tokens * hidden if residual else 0)
    read = x * (2 if residual else 1) + params
    return _vector(kind, dtype, flops, read, x * (2 if residual else 1))


def rmsnorm(tokens: int, hidden: int, residual: bool = False, dtype: str = "bf16") -> OpWork:
    """RMSNorm (see :func:`norm`)."""
    return norm(tokens, hidden, "rmsnorm", residual, dtype)


def layernorm(tokens: int, hidden: int, residual: bool = False, dtype: str = "bf16") -> OpWork:
    """LayerNorm (see :func:`norm`)."""
    return norm(tokens, hidden, "layernorm", residual, dtype)


def softmax(rows: int, cols: int, dtype: str = "bf16") -> OpWork:
    """Row-wise softmax (max, exp, sum, divide)."""
    b = rows * cols * _size(dtype)
    return _vector("softmax", dtype, 5.0 * rows * cols, b, b)


def elementwise(elements: int, inputs: int = 1, flops_per_element: float = 1.0, dtype: str = "bf16",
                pattern: str = "sequential", run_bytes: int = 1 << 20) -> OpWork:
    """An elementwise op (add, mul, activation) over ``elements`` outputs.

    ``pattern``/``run_bytes`` describe how the inputs are walked (a strided view, a gather).
    """
    s = _size(dtype)
    kind: Any = pattern
    pat = SEQUENTIAL if pattern == "sequential" else AccessPattern(kind, run_bytes)
    return _vector("elementwise", dtype, flops_per_element * elements, elements * inputs * s,
                   elements * s, read_pattern=pat)


def embedding(tokens: int, hidden: int, vocab: int, dtype: str = "bf16") -> OpWork:
    """Gather ``tokens`` rows of a ``vocab x hidden`` table: random rows, contiguous within."""
    if vocab <= 0:
        raise ValueError("vocab must be positive")
    s = _size(dtype)
    row = hidden * s
    return _vector("embedding", dtype, 0.0, tokens * row + tokens * 4, tokens * row,
                   read_pattern=AccessPattern("random", row))


def kv_append(batch: int, tokens: int, kv_heads: int, head_dim: int, dtype: str = "bf16") -> OpWork:
    """Write new K and V of ``tokens`` positions into the cache: one strided slot per token."""
    s = _size(dtype)
    b = 2 * batch * tokens * kv_heads * head_dim * s
    return _vector("kv_append", dtype, 0.0, b, b,
                   write_pattern=AccessPattern("strided", kv_heads * head_dim * s))


def _collective(op: str, nbytes: int, ranks: int, algorithm: str, dtype: str, reduces: bool) -> OpWork:
    """A collective's local work on one participant: it reads its buffer and writes the result
    (reductions add what arrives); its duration is set by the links when all participants meet
    (``capture/sim/cluster``), not by this work."""
    s = _size(dtype)
    if algorithm not in ("ring", "tree"):
        raise ValueError(f"{op}: algorithm must be ring or tree, got {algorithm!r}")
    return OpWork(op, "collective", dtype, (nbytes / s) * (ranks - 1) / ranks if reduces else 0.0, nbytes, nbytes)


def all_reduce(nbytes: int, ranks: int = 2, algorithm: str = "ring", dtype: str = "bf16") -> OpWork:
    """Sum a buffer of ``nbytes`` over ``ranks`` participants, the result on every one."""
    return _collective("all_reduce", nbytes, ranks, algorithm, dtype, True)


def all_gather(nbytes: int, ranks: int = 2, algorithm: str = "ring", dtype: str = "bf16") -> OpWork:
    """Every participant gets every participant's part (``nbytes``: the gathered output)."""
    return _collective("all_gather", nbytes, ranks, algorithm, dtype, False)


def reduce_scatter(nbytes: int, ranks: int = 2, algorithm: str = "ring", dtype: str = "bf16") -> OpWork:
    """Sum a buffer of ``nbytes`` over ``ranks``; each participant keeps one part of the sum."""
    return _collective("reduce_scatter", nbytes, ranks, algorithm, dtype, True)


def send(nbytes: int, ranks: int = 2, algorithm: str = "ring", dtype: str = "bf16", peer: str = "") -> OpWork:
    """Send ``nbytes`` to one peer (the matching ``recv`` runs on it; ``peer`` names it, as
    ``host1/device0``, for the trace)."""
    return _collective("send", nbytes, ranks, algorithm, dtype, False)


def recv(nbytes: int, ranks: int = 2, algorithm: str = "ring", dtype: str = "bf16", peer: str = "") -> OpWork:
    """Receive ``nbytes`` from one peer (``peer``: the sender, for the trace)."""
    return _collective("recv", nbytes, ranks, algorithm, dtype, False)


COLLECTIVE_KINDS = ("all_reduce", "all_gather", "reduce_scatter", "send", "recv")
OP_KINDS: dict[str, Callable[..., OpWork]] = {
    "gemm": gemm,
    "matmul": gemm,
    "attention": attention,
    "rmsnorm": rmsnorm,
    "layernorm": layernorm,
    "softmax": softmax,
    "elementwise": elementwise,
    "embedding": embedding,
    "kv_append": kv_append,
    "all_reduce": all_reduce,
    "all_gather": all_gather,
    "reduce_scatter": reduce_scatter,
    "send": send,
    "recv": recv,
}


_SIGNATURES = {name: inspect.signature(fn) for name, fn in OP_KINDS.items()}
# per kind: (the parameter names, the required ones): a call whose keywords fit needs no bind()
_PARAMETERS = {name: (frozenset(sig.parameters),
                      frozenset(p.name for p in sig.parameters.values() if p.default is inspect.Parameter.empty))
               for name, sig in _SIGNATURES.items()}


def op_work(op: str, **shapes: Any) -> OpWork:
    """The work of op kind ``op`` with keyword ``shapes`` (see each kind's function)."""
    if op not in OP_KINDS:
        raise ValueError(f"unknown op {op!r}; known: {', '.join(sorted(OP_KINDS))}")
    names, required = _PARAMETERS[op]
    if not (shapes.keys() <= names and required <= shapes.keys()):
        try:
            _SIGNATURES[op].bind(**shapes)  # for its message
        except TypeError as exc:
            raise ValueError(f"{op}: {exc}") from None
    for name, value in shapes.items():
        if isinstance(value, int) and not isinstance(value, bool) and value <= 0:
            raise ValueError(f"{op}: {name} must be positive, got {value}")
    return OP_KINDS[op](**shapes)
