"""A decoder-only transformer's step split over ``tp`` devices (tensor parallelism, Megatron-style):
each device holds 1/tp of the heads and of the MLP's intermediate width, and the partial sums of
the output projections are all-reduced after attention and after the MLP; the LM head is split
over the vocabulary and its logits all-gathered.

:func:`tp_step` lists the items of one step in order: ``("op", name, kind, shapes)`` for a
launch (as :mod:`.llm`'s lists) and ``(collective, name, nbytes)`` for a collective over the
tensor-parallel group (``all_reduce``, ``all_gather``). With ``tp=1`` it is :mod:`.llm`'s step
without collectives.
"""

from __future__ import annotations

from typing import Any

from .device.ops import DTYPE_BYTES
from .llm import LlmConfig

Item = tuple[Any, ...]


def _check(cfg: LlmConfig, tp: int) -> None:
    if tp < 1 or cfg.heads % tp or cfg.kv_heads % tp or cfg.intermediate % tp:
        raise ValueError(f"tensor parallelism {tp} must divide heads ({cfg.heads}), kv_heads ({cfg.kv_heads}) and "
                         f"the intermediate width ({cfg.intermediate})")


def tp_layer(cfg: LlmConfig, i: int, batch: int, q_len: int, kv_len: int, tp: int) -> list[Item]:
    """Layer ``i`` on one of ``tp`` devices."""
    dt, h, d = cfg.dtype, cfg.hidden, cfg.head_dim
    tokens = batch * q_len
    heads, kv_heads, inter = cfg.heads // tp, cfg.kv_heads // tp, cfg.intermediate // tp
    act = tokens * h * DTYPE_BYTES[dt]  # the hidden state the partial sums are reduced over
    p = f"layers.{i}."
    items: list[Item] = [
        ("op", p + "input_norm", "rmsnorm", dict(tokens=tokens, hidden=h, residual=i > 0, dtype=dt)),
        ("op", p + "qkv_proj", "gemm", dict(m=tokens, n=(heads + 2 * kv_heads) * d, k=h, dtype=dt)),
        ("op", p + "kv_append", "kv_append", dict(batch=batch, tokens=q_len, kv_heads=kv_heads, head_dim=d,
                                                  dtype=dt)),
        ("op", p + "attention", "attention", dict(batch=batch, heads=heads, kv_heads=kv_heads, head_dim=d,
                                                  q_len=q_len, kv_len=kv_len, dtype=dt)),
        ("op", p + "o_proj", "gemm", dict(m=tokens, n=h, k=heads * d, dtype=dt)),
    ]
    if tp > 1:
        items.append(("all_reduce", p + "attn_all_reduce", act))
    items += [
        ("op", p + "post_attn_norm", "rmsnorm", dict(tokens=tokens, hidden=h, residual=True, dtype=dt)),
        ("op", p + "gate_up_proj", "gemm", dict(m=tokens, n=2 * inter, k=h, dtype=dt)),
        ("op", p + "silu_mul", "elementwise", dict(elements=tokens * inter, inputs=2, flops_per_element=5.0,
                                                   dtype=dt)),
        ("op", p + "down_proj", "gemm", dict(m=tokens, n=h, k=inter, dtype=dt)),
    ]
    if tp > 1:
        items.append(("all_reduce", p + "mlp_all_reduce", act))
    return items


def tp_step(cfg: LlmConfig, batch: int, q_len: int, kv_len: int, tp: int) -> list[Item]:
    """One step (prefill: ``q_len == kv_len``; decode: ``q_len`` 1) on one of ``tp`` devices."""
    _check(cfg, tp)
    tokens, dt = batch * q_len, cfg.dtype
    items: list[Item] = [("op", "embed", "embedding", dict(tokens=tokens, hidden=cfg.hidden, vocab=cfg.vocab,
                                                           dtype=dt))]
    for i in range(cfg.layers):
        items += tp_layer(cfg, i, tokens // q_len, q_len, kv_len, tp)
    items.append(("op", "final_norm", "rmsnorm", dict(tokens=tokens, hidden=cfg.hidden, residual=True, dtype=dt)))
    vocab = -(-cfg.vocab // tp)
    items.append(("op", "lm_head", "gemm", dict(m=batch, n=vocab, k=cfg.hidden, dtype=dt)))
    if tp > 1:
        items.append(("all_gather", "logits_all_gather", batch * vocab * tp * DTYPE_BYTES[dt]))
    return items
