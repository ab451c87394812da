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
class Call:
    """An operator or function applied to its operands: ``+ - * /``, ``neg`` (unary minus) or
    one of ``FUNCTIONS``; one node type for all, so that walking the tree has one case."""

    func: str
    args: tuple[Node, ...]


Node = Num | Name | Call


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
    vals = [evaluate(a, resolve) for a in node.args]
    with np.errstate(divide="ignore", invalid="ignore"):
        return _apply(node.func, vals)


_FOLDS = {"+": np.add, "-": np.subtract, "min": np.minimum, "max": np.maximum}


def _apply(func: str, vals: list[Value]) -> Value:
    """One operator or function on evaluated operands; division by zero gives NaN."""
    if func in ("neg", "clip01"):
        (v, u), = vals
        return (-v if func == "neg" else np.clip(v, 0.0, 1.0)), u
    if func in ("*", "/"):
        (lv, lu), (rv, ru) = vals
        if func == "*":
            return lv * rv, Unit((lu * ru).dims)
        out = np.divide(lv, rv)
        return np.where(np.isfinite(out), out, np.nan) if isinstance(out, np.ndarray) else out, Unit((lu / ru).dims)
    _same_units(vals, func)
    out = vals[0][0]
    for v, _ in vals[1:]:
        out = _FOLDS[func](out, v)
    return out, vals[0][1]


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
            node = Call(self.take(), (node, self.term()))
        return node

    def term(self) -> Node:
        node = self.unary()
        while self.peek() in ("*", "/"):
            node = Call(self.take(), (node, self.unary()))
        return node

    def unary(self) -> Node:
        if self.peek() == "-":
            self.take()
            return Call("neg", (self.unary(),))
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
