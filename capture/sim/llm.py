"""Shapes of a decoder-only transformer's prefill and decode steps as simulator ops.

:func:`decode_ops` and :func:`prefill_ops` list, in order, the ops one step launches
(name, op kind, shapes) for :func:`.costs.op_cost` or the runtime's ``Device.launch``. The
layer is the fused form an inference engine runs: residual add folded into RMSNorm, Q/K/V
and gate/up projections as single GEMMs, SiLU x up as one elementwise op.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .device.ops import DTYPE_BYTES

OpCall = tuple[str, str, dict[str, Any]]  # (name, op kind, shapes)


@dataclass(frozen=True)
class LlmConfig:
    """Dimensions of a decoder-only model (Llama-style: GQA, SwiGLU, untied embeddings)."""

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    dtype: str = "bf16"

    @property
    def parameters(self) -> int:
        """Number of weights: embedding, layers, final norm and LM head."""
        h, d = self.hidden, self.head_dim
        attn = h * (self.heads + 2 * self.kv_heads) * d + self.heads * d * h
        mlp = 3 * h * self.intermediate
        return 2 * self.vocab * h + self.layers * (attn + mlp + 2 * h) + h

    @property
    def weight_bytes(self) -> int:
        """Bytes of all weights in ``dtype``."""
        return self.parameters * DTYPE_BYTES[self.dtype]

    def kv_bytes_per_token(self) -> int:
        """KV-cache bytes one token adds across all layers."""
        return 2 * self.layers * self.kv_heads * self.head_dim * DTYPE_BYTES[self.dtype]


MODELS = {
    "8b": LlmConfig(hidden=4096, layers=32, heads=32, kv_heads=8, head_dim=128, intermediate=14336,
                    vocab=128256),
    "70b": LlmConfig(hidden=8192, layers=80, heads=64, kv_heads=8, head_dim=128, intermediate=28672,
                     vocab=128256),
}


def _layer(cfg: LlmConfig, i: int, tokens: int, batch: int, q_len: int, kv_len: int) -> list[OpCall]:
    dt, h = cfg.dtype, cfg.hidden
    p = f"layers.{i}."
    attn = dict(batch=batch, heads=cfg.heads, kv_heads=cfg.kv_heads, head_dim=cfg.head_dim, q_len=q_len,
                kv_len=kv_len, dtype=dt)
    return [
        (p + "input_norm", "rmsnorm", dict(tokens=tokens, hidden=h, residual=i > 0, dtype=dt)),
        (p + "qkv_proj", "gemm",
         dict(m=tokens, n=(cfg.heads + 2 * cfg.kv_heads) * cfg.head_dim, k=h, dtype=dt)),
        (p + "kv_append", "kv_append",
         dict(batch=batch, tokens=q_len, kv_heads=cfg.kv_heads, head_dim=cfg.head_dim, dtype=dt)),
        (p + "attention", "attention", attn),
        (p + "o_proj", "gemm", dict(m=tokens, n=h, k=cfg.heads * cfg.head_dim, dtype=dt)),
        (p + "post_attn_norm", "rmsnorm", dict(tokens=tokens, hidden=h, residual=True, dtype=dt)),
        (p + "gate_up_proj", "gemm", dict(m=tokens, n=2 * cfg.intermediate, k=h, dtype=dt)),
        (p + "silu_mul", "elementwise",
         dict(elements=tokens * cfg.intermediate, inputs=2, flops_per_element=5.0, dtype=dt)),
        (p + "down_proj", "gemm", dict(m=tokens, n=h, k=cfg.intermediate, dtype=dt)),
    ]


def _step(cfg: LlmConfig, batch: int, q_len: int, kv_len: int) -> list[OpCall]:
    tokens = batch * q_len
    ops: list[OpCall] = [("embed", "embedding",
                          dict(tokens=tokens, hidden=cfg.hidden, vocab=cfg.vocab, dtype=cfg.dtype))]
    for i in range(cfg.layers):
        ops += _layer(cfg, i, tokens, batch, q_len, kv_len)
    ops.append(("final_norm", "rmsnorm",
                dict(tokens=tokens, hidden=cfg.hidden, residual=True, dtype=cfg.dtype)))
    # logits only for the last position of each sequence
    ops.append(("lm_head", "gemm", dict(m=batch, n=cfg.vocab, k=cfg.hidden, dtype=cfg.dtype)))
    return ops


def prefill_ops(cfg: LlmConfig, batch: int, prompt: int) -> list[OpCall]:
    """Ops of the prefill of ``batch`` prompts of ``prompt`` tokens each."""
    return _step(cfg, batch, prompt, prompt)


def decode_ops(cfg: LlmConfig, batch: int, context: int) -> list[OpCall]:
    """Ops of one decode step: one new token per sequence over ``context`` cached tokens."""
    return _step(cfg, batch, 1, context + 1)
