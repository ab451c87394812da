"""The fleet query language: what each form keeps, and a malformed query named by position and
problem (never evaluated as Python)."""

from __future__ import annotations

import pytest
from accelview.model.fleet.query import FIELDS, QueryError, compile_query
from hypothesis import given, settings
from hypothesis import strategies as st


def _row(**kw):
    base = {"host": "host3", "device": 1, "lane": "collective", "op": "ncclAllReduce_sum", "class": "memory",
            "count": 6, "total_ns": 12_000_000, "mean_ns": 2_000_000, "p50_ns": 1_900_000, "p95_ns": 2_500_000,
            "max_ns": 2_600_000}
    base.update(kw)
    return tuple(base[f] for f in FIELDS)


ROWS = [_row(), _row(host="host10", op="matmul", lane="matrix", **{"class": "compute"}, p95_ns=300, max_ns=400,
             device=0),
        _row(host="host0", op="ncclBroadcast", device=None, count=1)]


def _keep(query):
    pred = compile_query(query)
    return [i for i, r in enumerate(ROWS) if pred(r)]


@pytest.mark.parametrize(("query", "kept"), [
    ("", [0, 1, 2]),
    ("op == 'matmul'", [1]),
    ('op != "matmul"', [0, 2]),
    ("op ~ 'nccl*'", [0, 2]),
    ("op ~ 'nccl'", []),  # a glob matches the whole name
    ("op ~ /All[Rr]educe/", [0]),  # a regex matches anywhere
    ("op !~ /^nccl/", [1]),
    ("op ~ /ALLREDUCE|^MAT/i", [0, 1]),
    ("op ~ /a\\/b/ or op ~ /\\d/", []),
    ("host in ['host0', 'host10']", [1, 2]),
    ("host not in ['host0', 'host10']", [0]),
    ("device == 1", [0]),
    ("device >= 0", [0, 1]),  # a lane of no device compares false
    ("device != 0", [0, 2]),
    ("p95_ns > 1ms", [0, 2]),
    ("p95_ns <= 300", [1]),
    ("p95_ns < 2.5ms", [1]),
    ("max_ns >= 2.6e6", [0, 2]),
    ("total_ns == 12ms and count > 1", [0, 1]),
    ("class == 'compute' or count == 1", [1, 2]),
    ("not op ~ 'nccl*'", [1]),
    ("NOT (lane == 'matrix' OR host == 'host0')", [0]),
    ("op ~ 'nccl*' and (host == 'host0' or device == 1) and not count < 2", [0]),
    ("lane == 'it\\'s'", []),
    ("mean_ns > 1.5ms and p95_ns >= 300µs", [0, 2]),
    ("p95_ns == 0.3us", [1]),
])
def test_queries_keep_the_rows_they_say(query, kept):
    assert _keep(query) == kept


def test_and_binds_tighter_than_or():
    assert _keep("op == 'matmul' or op ~ 'nccl*' and count == 1") == [1, 2]
    assert _keep("(op == 'matmul' or op ~ 'nccl*') and count == 1") == [2]


def test_a_query_is_never_evaluated_as_python():
    with pytest.raises(QueryError):
        compile_query("__import__('os').system('true')")
    with pytest.raises(QueryError):
        compile_query("count == len([])")


@pytest.mark.parametrize(("query", "position", "words"), [
    ("op == ", 7, "found the end of the query"),
    ("op = 'x'", 4, "write =="),
    ("opp == 'x'", 1, "unknown field 'opp'"),
    ("op == 'x", 7, "never closed"),
    ("op == x", 7, "quoted string"),
    ("count == 'x'", 10, "is a number"),
    ("op < 'x'", 4, "compares numbers"),
    ("count ~ 'x*'", 7, "matches names"),
    ("count > 3ms", 9, "not a time"),
    ("p95_ns > 3kb", 10, "time unit"),
    ("(op == 'x'", 11, "expected ) to close the ( at position 1"),
    ("op == 'x')", 10, "expected and, or or the end"),
    ("op == 'x' andd count > 1", 11, "expected and, or or the end"),
    ("op in 'x'", 7, "expected [ to open the list"),
    ("op in ['x' 'y']", 12, "expected , or ]"),
    ("op ~ /a(/", 6, "bad regular expression"),
    ("op ~ 3", 6, "a 'glob' or a /regex/"),
    ("and op == 'x'", 1, "expected a field"),
    ("op == 'x' or", 13, "expected a field"),
    ("op $ 'x'", 4, "unexpected character '$'"),
    ("p95_ns > 1 ms", 12, "expected and, or or the end"),
])
def test_a_malformed_query_names_the_position_and_the_problem(query, position, words):
    with pytest.raises(QueryError) as e:
        compile_query(query)
    msg = str(e.value)
    assert msg.startswith(f"query: position {position}: "), msg
    assert words in msg and "\n" not in msg
    assert e.value.position == position


FRAGMENTS = ["op", "host", "count", "p95_ns", "device", "==", "!=", "<", ">=", "~", "!~", "in", "not", "and", "or",
             "(", ")", "[", "]", ",", "'x*'", '"a\\"b"', "/nc+l/i", "/(/", "3", "2.5ms", "1e3", "'", "/", "=", "µs"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=12) | st.lists(st.text(max_size=6), max_size=4))
def test_any_text_parses_or_is_one_query_error(parts):
    text = " ".join(parts)
    try:
        pred = compile_query(text)
    except QueryError as e:
        assert 1 <= e.position <= len(text) + 1 and "\n" not in str(e)
        return
    for r in ROWS:
        assert pred(r) in (True, False)
