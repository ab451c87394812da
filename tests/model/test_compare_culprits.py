"""Who a distributed run's findings blame, and how that changed between two runs: appeared,
went away, moved, or one more (several stragglers per run)."""

from __future__ import annotations

import pytest
from accelview.model.analysis.findings import Finding
from accelview.model.compare.culprits import culprit_of, culprits, news


def _straggler(host: str, device: int | None = None, rank: int | None = None) -> Finding:
    who = {"host": host, "device": device} | ({"rank": rank} if rank is not None else {})
    return Finding("straggler", "high", 0, 1, 10, f"{host}/{device} arrives last; the others wait", "",
                   evidence={"culprit": who})


def test_the_culprit_in_words():
    assert culprit_of(_straggler("host1", 1), "host") == ("host1", "device 1 of host1")
    assert culprit_of(_straggler("host1"), "host") == ("host1", "host host1")
    assert culprit_of(_straggler("node-a", 2, rank=5), "rank") == ("rank 5", "rank 5 (GPU 2)")
    assert culprit_of(Finding("gpu-idle", "low", 0, 1, 1, "", ""), "host") == (None, "")


@pytest.mark.parametrize("a, b, says", [
    ([("host1", 1)], [("host2", 1)], ["the straggler moved from device 1 of host1 to device 1 of host2"]),
    ([], [("host1", None)], ["now a straggler: host1/None arrives last"]),
    ([("host1", 1)], [], ["no more straggler (was device 1 of host1)"]),
    ([("host1", 1)], [("host2", 0), ("host1", 1)], ["device 0 of host2 is now a straggler too"]),
    ([("host2", 0), ("host1", 1)], [("host1", 1)], ["device 0 of host2 is no longer a straggler"]),
    ([("host1", 1), ("host3", 0)], [("host2", 1)],
     ["the stragglers moved from device 1 of host1 and device 0 of host3 to device 1 of host2"]),
    ([("host1", 1)], [("host1", 1)], []),
])
def test_what_changed_in_who_is_blamed(a, b, says):
    def side(who):
        return culprits([_straggler(h, d) for h, d in who], "host")

    assert news(side(a), side(b)) == says
