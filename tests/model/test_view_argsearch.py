"""Search by argument value: ``key=value`` and ``arg:text`` over the args table."""

from __future__ import annotations

from accelview.model import TraceBuilder, TrackKind
from accelview.model.view.argsearch import parse_query
from accelview.model.view.navigate import find_slices


def attention():
    """Attention slices with kv_len 514, 5140, 12 and none (514 only in its name); a str and a
    real argument; and ``found(query)``: the start times of what a search finds."""
    b = TraceBuilder()
    host = b.add_track("h", TrackKind.HOST, host="h")
    th = b.add_track("t", TrackKind.HOST_THREAD, parent=host, host="h")
    b.add_slice(th, 4_000, 10, "attn", "k", args={"kv_len": 514})
    b.add_slice(th, 1_000, 10, "attn", "k", args={"kv_len": 5140, "dir": "H2D"})
    b.add_slice(th, 2_000, 10, "attn", "k", args={"kv_len": 12, "ratio": 0.514})
    b.add_slice(th, 3_000, 10, "attn 514", "k")
    b.add_slice(th, 5_000, 10, "gemm<N=4>", "k")
    tr = b.build()
    return tr, lambda q: tr.slices.start_ns[find_slices(tr, q)].tolist()


def test_the_syntax_is_key_equals_value_or_arg_colon_text():
    assert parse_query(" kv_len=514 ") == ("kv", "kv_len", "514")
    assert parse_query("ARG: 514") == ("arg", "", "514")
    assert parse_query("attn 514") == ("name", "", "attn 514")
    assert parse_query("a b=c") == ("name", "", "a b=c")  # a key has no spaces


def test_key_equals_value_finds_the_argument_equal_to_it():
    _, found = attention()
    assert found("kv_len=514") == [4_000]
    assert found("KV_LEN=12") == [2_000]
    assert found("dir=h2d") == [1_000]
    assert found("ratio=0.514") == [2_000]
    assert found("kv_len=") == []
    assert found("gemm<n=4") == [5_000]  # no argument has that key: a name with "=" in it


def test_arg_text_finds_any_value_containing_it_ordered_by_start():
    _, found = attention()
    # 5140 (start 1000), 0.514 (2000), 514 (4000); never the slice with 514 only in its name.
    assert found("arg:514") == [1_000, 2_000, 4_000]
    assert found("arg:h2") == [1_000]


def test_plain_text_still_searches_names_only():
    tr, found = attention()
    assert found("514") == [3_000]
    assert len(find_slices(tr, "attn")) == 4
    assert found("nokey=514") == []
