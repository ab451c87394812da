"""A small, safe expression language for derived metrics (never ``eval``).

Grammar: numbers, names, ``+ - * /``, unary minus, parentheses, and the functions ``min``,
``max`` and ``clip01``. Names are resolved by the caller (base counters, other metrics, device
constants). Evaluation is vectorised over numpy arrays and checks units as it goes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .units import Unit, UnitError

_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)|([A-Za-z_][A-Za-z0-9_.]*)|(.))")
FUNCTIONS = ("min", "max", "clip01")


class ExprError(UnitError):
    """An expression that does not parse, names something unknown, or mixes units."""


@dataclass(frozen=True)
class Num:
    """A number literal (dimensionless)."""

    value: float


@dataclass(frozen=True)
class Name:
    """A reference to a counter, metric or constant."""

    name: str


@dataclass(frozen=True)
class BinOp:
    """``left op right`` for op in + - * /."""

    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Neg:
    """Unary minus."""

    operand: Node


@dataclass(frozen=True)
class Call:
    """A function call."""

    func: str
    args: tuple[Node, ...]


Node = Num | Name | BinOp | Neg | Call


def parse(text: str) -> Node:
    """Parse an expression into a tree; raises ExprError naming the problem."""
    tokens = _tokenize(text)
    parser = _Parser(tokens, text)
    node = parser.expr()
    if parser.peek() is not None:
        raise ExprError(f"unexpected {parser.peek()!r} in {text!r}")
    return node


def names(node: Node) -> set[str]:
    """All names an expression refers to."""
    if isinstance(node, Name):
        return {node.name}
    if isinstance(node, BinOp):
        return names(node.left) | names(node.right)
    if isinstance(node, Neg):
        return names(node.operand)
    if isinstance(node, Call):
        return set().union(*(names(a) for a in node.args))
    return set()


Value = tuple[np.ndarray | float, Unit]


def evaluate(node: Node, resolve: Callable[[str], Value]) -> Value:
    """Evaluate vectorised; values are in base units (scale 1), results likewise."""
    if isinstance(node, Num):
        return node.value, Unit()
    if isinstance(node, Name):
        return resolve(node.name)
    if isinstance(node, Neg):
        v, u = evaluate(node.operand, resolve)
        return -v, u
    if isinstance(node, Call):
        vals = [evaluate(a, resolve) for a in node.args]
        if node.func == "clip01":
            (v, u), = vals
            return np.clip(v, 0.0, 1.0), u
        _same_units(vals, node.func)
        f = np.minimum if node.func == "min" else np.maximum
        out = vals[0][0]
        for v, _ in vals[1:]:
            out = f(out, v)
        return out, vals[0][1]
    lv, lu = evaluate(node.left, resolve)
    rv, ru = evaluate(node.right, resolve)
    with np.errstate(divide="ignore", invalid="ignore"):
        if node.op in "+-":
            _same_units([(lv, lu), (rv, ru)], node.op)
            return (lv + rv if node.op == "+" else lv - rv), lu
        if node.op == "*":
            return lv * rv, Unit((lu * ru).dims)
        out = np.divide(lv, rv)
        return np.where(np.isfinite(out), out, np.nan) if isinstance(out, np.ndarray) else out, Unit((lu / ru).dims)


def _same_units(vals: list[Value], what: str) -> None:
    first = vals[0][1]
    for _, u in vals[1:]:
        if not first.same_dimension(u):
            raise ExprError(f"unit mismatch in {what!r}: {first} and {u}")


def _tokenize(text: str) -> list[str]:
    out = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            break
        pos = m.end()
        tok = next(g for g in m.groups() if g is not None) if any(m.groups()) else None
        if tok is None:
            continue
        if m.group(3) is not None and tok not in "+-*/(),":
            raise ExprError(f"unexpected character {tok!r} in {text!r}")
        out.append(tok)
    return out


class _Parser:
    def __init__(self, tokens: list[str], text: str) -> None:
        self.tokens, self.i, self.text = tokens, 0, text

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            raise ExprError(f"expected {expected or 'more'} in {self.text!r}")
        self.i += 1
        return tok

    def expr(self) -> Node:
        node = self.term()
        while self.peek() in ("+", "-"):
            node = BinOp(self.take(), node, self.term())
        return node

    def term(self) -> Node:
        node = self.unary()
        while self.peek() in ("*", "/"):
            node = BinOp(self.take(), node, self.unary())
        return node

    def unary(self) -> Node:
        if self.peek() == "-":
            self.take()
            return Neg(self.unary())
        return self.primary()

    def primary(self) -> Node:
        tok = self.take()
        if tok == "(":
            node = self.expr()
            self.take(")")
            return node
        if tok[0].isdigit():
            return Num(float(tok))
        if tok[0].isalpha() or tok[0] == "_":
            if self.peek() == "(":
                if tok not in FUNCTIONS:
                    raise ExprError(f"unknown function {tok!r} in {self.text!r}")
                self.take("(")
                args = [self.expr()]
                while self.peek() == ",":
                    self.take(",")
                    args.append(self.expr())
                self.take(")")
                if (tok == "clip01" and len(args) != 1) or (tok != "clip01" and len(args) < 2):
                    raise ExprError(f"wrong number of arguments to {tok} in {self.text!r}")
                return Call(tok, tuple(args))
            return Name(tok)
        raise ExprError(f"unexpected {tok!r} in {self.text!r}")
