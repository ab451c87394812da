"""The small query language of ``accelview query``: a filter over the rows of op statistics.

    op ~ '*all_reduce*' and host in ['host3', 'host7'] and not (p95_ns < 50us or device == 0)

Fields: the names ``op``, ``host``, ``lane``, ``class``; the numbers ``device``, ``count``,
``total_ns``, ``mean_ns``, ``p50_ns``, ``p95_ns``, ``max_ns``. Comparisons ``== != < <= > >=``
(names compare with quoted strings, numbers with numbers; ``<`` and friends on numbers only),
``FIELD in [v, ...]`` and ``FIELD not in [...]``, ``NAME ~ 'glob*'`` (the whole name, case
sensitive) and ``NAME ~ /regex/`` (a match anywhere, Python syntax; ``/regex/i`` ignores case), ``!~`` for no match;
``and``, ``or``, ``not``, parentheses. A number may carry a time unit (``ns us µs ms s``) on the
time fields. The empty query keeps every row.

The query is tokenised and parsed here (recursive descent) into closures over a row: nothing is
ever evaluated as Python. A malformed query raises ``QueryError``, one line naming the position
(1-based character) and the problem.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from accelview.model.errors import AccelviewError

NAME_FIELDS = ("host", "lane", "op", "class")
NUMBER_FIELDS = ("device", "count", "total_ns", "mean_ns", "p50_ns", "p95_ns", "max_ns")
FIELDS = ("host", "device", "lane", "op", "class", "count", "total_ns", "mean_ns", "p50_ns", "p95_ns", "max_ns")
TIME_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
KEYWORDS = ("and", "or", "not", "in")
COMPARISONS = ("==", "!=", "<=", ">=", "<", ">")

Row = Sequence[Any]
Predicate = Callable[[Row], bool]


class QueryError(AccelviewError):
    """A query that does not parse: where (1-based character) and what is wrong."""

    def __init__(self, position: int, problem: str) -> None:
        self.position = position
        self.problem = problem
        super().__init__(f"query: position {position}: {problem}")


@dataclass(frozen=True)
class Token:
    """One token: its kind (name, string, number, regex, op, end), value and 0-based offset."""

    kind: str
    value: Any
    at: int
    text: str

    def describe(self) -> str:
        """How an error message names this token."""
        return "the end of the query" if self.kind == "end" else repr(self.text)


_NUMBER = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_UNIT = re.compile(r"(ns|us|µs|ms|s)(?![A-Za-z_0-9])")
_PUNCT = ("==", "!=", "<=", ">=", "!~", "<", ">", "~", "(", ")", "[", "]", ",")


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text``, ending with an ``end`` token; QueryError on a character or
    literal that cannot start or finish a token."""
    out: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in "'\"":
            value, j = _quoted(text, i, c)
            out.append(Token("string", value, i, text[i:j]))
            i = j
        elif c == "/":
            value, j = _quoted(text, i, "/")
            flags = 0
            if text.startswith("i", j) and not (text[j + 1:j + 2].isalnum() or text[j + 1:j + 2] == "_"):
                flags, j = re.IGNORECASE, j + 1
            try:
                pattern = re.compile(value, flags)
            except re.error as e:
                raise QueryError(i + 1, f"bad regular expression /{value}/: {e.msg}") from None
            out.append(Token("regex", pattern, i, text[i:j]))
            i = j
        elif (m := _NUMBER.match(text, i)) is not None:
            j = m.end()
            value: float = float(m.group()) if any(ch in m.group() for ch in ".eE") else int(m.group())
            unit = _UNIT.match(text, j)
            if unit is not None:
                value *= TIME_UNITS[unit.group(1)]
                j = unit.end()
            elif j < n and (text[j].isalnum() or text[j] == "_"):
                while j < n and (text[j].isalnum() or text[j] == "_"):
                    j += 1
                raise QueryError(i + 1, f"{text[i:j]!r}: a number, then a time unit (ns, us, µs, ms, s) or nothing")
            out.append(Token("time" if unit else "number", value, i, text[i:j]))
            i = j
        elif (m := _NAME.match(text, i)) is not None:
            word = m.group()
            out.append(Token("keyword" if word.lower() in KEYWORDS else "name",
                             word.lower() if word.lower() in KEYWORDS else word, i, word))
            i = m.end()
        else:
            op = next((p for p in _PUNCT if text.startswith(p, i)), None)
            if op is None:
                hint = " (write == to compare)" if c == "=" else ""
                raise QueryError(i + 1, f"unexpected character {c!r}{hint}")
            out.append(Token("op", op, i, op))
            i += len(op)
    out.append(Token("end", None, n, ""))
    return out


def _quoted(text: str, start: int, quote: str) -> tuple[str, int]:
    """The literal opened by ``quote`` at ``start`` (backslash escapes the quote and itself; in a
    regex other escapes stay for ``re``) and the offset just after it."""
    chars: list[str] = []
    i = start + 1
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in (quote, "\\"):
            chars.append(text[i + 1] if quote != "/" or text[i + 1] == "/" else "\\\\")
            i += 2
        elif c == quote:
            return "".join(chars), i + 1
        else:
            chars.append(c)
            i += 1
    what = "regular expression" if quote == "/" else "string"
    raise QueryError(start + 1, f"{what} opened here is never closed (missing {quote})")


class _Parser:
    """Recursive descent over the tokens: or → and → not → comparison | ( or )."""

    def __init__(self, text: str, columns: dict[str, int]) -> None:
        self.tokens = tokenize(text)
        self.i = 0
        self.columns = columns

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def take(self) -> Token:
        t = self.tokens[self.i]
        self.i += 1
        return t

    def fail(self, problem: str, tok: Token | None = None) -> QueryError:
        return QueryError((tok or self.tok).at + 1, problem)

    def is_(self, kind: str, value: Any = None) -> bool:
        return self.tok.kind == kind and (value is None or self.tok.value == value)

    def parse(self) -> Predicate:
        if self.is_("end"):
            return lambda row: True
        pred = self.or_()
        if not self.is_("end"):
            raise self.fail(f"expected and, or or the end of the query, found {self.tok.describe()}")
        return pred

    def or_(self) -> Predicate:
        parts = [self.and_()]
        while self.is_("keyword", "or"):
            self.take()
            parts.append(self.and_())
        return parts[0] if len(parts) == 1 else (lambda row: any(p(row) for p in parts))

    def and_(self) -> Predicate:
        parts = [self.not_()]
        while self.is_("keyword", "and"):
            self.take()
            parts.append(self.not_())
        return parts[0] if len(parts) == 1 else (lambda row: all(p(row) for p in parts))

    def not_(self) -> Predicate:
        if self.is_("keyword", "not"):
            self.take()
            inner = self.not_()
            return lambda row: not inner(row)
        if self.is_("op", "("):
            opened = self.take()
            inner = self.or_()
            if not self.is_("op", ")"):
                raise self.fail(f"expected ) to close the ( at position {opened.at + 1}, found {self.tok.describe()}")
            self.take()
            return inner
        return self.comparison()

    def comparison(self) -> Predicate:
        field_tok = self.take()
        if field_tok.kind != "name":
            raise self.fail(f"expected a field ({', '.join(FIELDS)}), found {field_tok.describe()}", field_tok)
        field = field_tok.value
        if field not in self.columns:
            close = [f for f in FIELDS if f.startswith(field[:2])] or list(FIELDS)
            raise self.fail(f"unknown field {field!r} (fields: {', '.join(close)})", field_tok)
        col = self.columns[field]
        is_name = field in NAME_FIELDS
        op = self.take()
        if op.kind == "keyword" and op.value == "not" and self.is_("keyword", "in"):
            self.take()
            inside = self.value_list(field)
            return lambda row: row[col] not in inside
        if op.kind == "keyword" and op.value == "in":
            inside = self.value_list(field)
            return lambda row: row[col] in inside
        if op.kind == "op" and op.value in ("~", "!~"):
            if not is_name:
                raise self.fail(f"{op.value} matches names; {field} is a number", op)
            match = self.pattern()
            if op.value == "~":
                return lambda row: row[col] is not None and match(row[col])
            return lambda row: row[col] is None or not match(row[col])
        if op.kind != "op" or op.value not in COMPARISONS:
            raise self.fail(f"expected a comparison (== != < <= > >= in ~) after {field}, found {op.describe()}", op)
        if is_name and op.value not in ("==", "!="):
            raise self.fail(f"{op.value} compares numbers; {field} is a name (use ==, !=, in or ~)", op)
        value = self.value(field)
        return _compare(col, op.value, value)

    def value(self, field: str) -> Any:
        tok = self.take()
        if field in NAME_FIELDS:
            if tok.kind != "string":
                raise self.fail(f"expected a quoted string ({field} is a name), found {tok.describe()}", tok)
            return tok.value
        if tok.kind not in ("number", "time"):
            raise self.fail(f"expected a number ({field} is a number), found {tok.describe()}", tok)
        if tok.kind == "time" and not field.endswith("_ns"):
            raise self.fail(f"{field} is not a time: give it a plain number, found {tok.describe()}", tok)
        return tok.value

    def value_list(self, field: str) -> frozenset[Any]:
        if not self.is_("op", "["):
            raise self.fail(f"expected [ to open the list after in, found {self.tok.describe()}")
        self.take()
        values = [self.value(field)]
        while self.is_("op", ","):
            self.take()
            values.append(self.value(field))
        if not self.is_("op", "]"):
            raise self.fail(f"expected , or ] in the list, found {self.tok.describe()}")
        self.take()
        return frozenset(values)

    def pattern(self) -> Callable[[str], bool]:
        tok = self.take()
        if tok.kind == "regex":
            return lambda s: tok.value.search(s) is not None
        if tok.kind == "string":
            glob = re.compile(fnmatch.translate(tok.value))
            return lambda s: glob.match(s) is not None
        raise self.fail(f"expected a 'glob' or a /regex/ after ~, found {tok.describe()}", tok)


def _compare(col: int, op: str, value: Any) -> Predicate:
    """The comparison of a row's column with a constant; a missing value (None) compares false
    except with !=."""
    if op == "==":
        return lambda row: row[col] == value
    if op == "!=":
        return lambda row: row[col] != value
    if op == "<":
        return lambda row: row[col] is not None and row[col] < value
    if op == "<=":
        return lambda row: row[col] is not None and row[col] <= value
    if op == ">":
        return lambda row: row[col] is not None and row[col] > value
    return lambda row: row[col] is not None and row[col] >= value


def compile_query(text: str, fields: Sequence[str] = FIELDS) -> Predicate:
    """A predicate over rows whose columns are ``fields`` (in that order) that keeps the rows
    ``text`` selects; QueryError when ``text`` is malformed."""
    return _Parser(text, {f: i for i, f in enumerate(fields)}).parse()
