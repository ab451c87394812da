"""Names as the text report shows them: cut to a column apart from each other, lanes qualified
by their rank or process where their own names repeat, and findings that claim nothing of zero."""

from __future__ import annotations

from accelview.model import TraceBuilder, TrackKind
from accelview.model.analysis.rank_collectives import _beyond
from accelview.model.analysis.trace_passes import _outlier_text
from accelview.model.text.clip import distinct_cuts
from accelview.model.text.lanes import lane_labels

KERNEL = "void split_embedding_backward_codegen_rowwise_adagrad_{}_kernel_{}_per_row_1<c10::Half>(" + \
    "at::GenericPackedTensorAccessor<float, 2ul, at::RestrictPtrTraits, long>, float, float, long)"


def test_names_sharing_start_and_end_are_cut_apart():
    names = [KERNEL.format(w, k) for w, k in (("unweighted", "cta"), ("unweighted", "warp"), ("weighted", "cta"))]
    names += [f"autograd::engine::evaluate_function: {op}Backward0" for op in ("Mean", "Mm", "Softmax", "Mean")]
    names += ["short", "x" * 60 + "a", "x" * 60 + "b"]
    for width in (12, 28, 40):
        cuts = distinct_cuts(names, width)
        assert all(len(c) <= width for c in cuts)
        assert len(set(zip(names, cuts, strict=True))) == len(set(names)) == len(set(cuts))  # one cut per name
        assert cuts[3] == cuts[6]  # the same name, the same cut
    cuts = distinct_cuts(names, 40)
    assert "unweighted_kernel_cta" in cuts[0] and "unweighted_kernel_warp" in cuts[1]  # shown where they part
    assert cuts[3].endswith("MeanBackward0") and cuts[7] == "short"


def test_names_alike_but_for_their_middle_are_numbered():
    names = ["a" * 30 + m + "b" * 30 for m in ("1", "2", "3")]
    cuts = distinct_cuts(names, 16)
    assert len(set(cuts)) == 3 and all(len(c) <= 16 for c in cuts)


def test_lanes_named_alike_are_qualified_by_their_rank():
    b = TraceBuilder()
    streams = []
    for rank in range(2):
        root = b.add_track(f"rank {rank}", TrackKind.HOST, host=f"h{rank}")
        gpu = b.add_track(f"GPU {rank}", TrackKind.DEVICE, parent=root, device=rank)
        streams += [b.add_track("stream 7", TrackKind.GPU_STREAM, parent=gpu, device=rank),
                    b.add_track(f"stream {rank + 20}", TrackKind.GPU_STREAM, parent=gpu, device=rank)]
    t = b.build()
    labels = lane_labels(t, streams)
    assert [labels[s] for s in streams] == ["rank 0 / stream 7", "stream 20", "rank 1 / stream 7", "stream 21"]
    assert lane_labels(t, streams[:2]) == {streams[0]: "stream 7", streams[1]: "stream 20"}


def test_findings_name_only_what_there_is():
    assert _outlier_text(0, 12, 5_000).startswith("12 ops started over")
    assert "runtime calls" not in _outlier_text(0, 12, 5_000)
    assert _outlier_text(3, 0, 5_000).startswith("3 runtime calls took over") and "ops started" not in \
        _outlier_text(3, 0, 5_000)
    assert "0 " not in _beyond(1, 0, 260e3, 42.6e6).replace("260", "").replace("42.6", "")
    assert "proven bound (±42.6 ms) at 2 of them" in _beyond(3, 2, 260e3, 42.6e6)
    assert "but not the proven bound" in _beyond(1, 0, 260e3, 42.6e6)
