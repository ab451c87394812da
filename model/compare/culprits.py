"""Who the findings of a distributed run read together blame (a straggler: a host, a device of a
host, a rank), and how that changed between two runs: a culprit that appeared, went away, or a
straggler that moved from one member to another. The cluster analysis can name several culprits
per run (latest first), so the two runs' *sets* of culprits are compared, per finding kind."""

from __future__ import annotations

from typing import Any

from accelview.model.analysis.findings import Finding

Culprits = dict[str, dict[str, str]]  # finding kind → culprit in words → the finding's summary, latest first


def culprit_of(f: Finding, member_kind: str) -> tuple[str | None, str]:
    """The member a finding blames ("host1", "rank 3") and who it is in words ("device 1 of host1",
    "host host1", "rank 3 (GPU 1)"); (None, "") when it blames nobody."""
    c: Any = f.evidence.get("culprit")
    if not isinstance(c, dict):
        return None, ""
    device = c.get("device")
    if member_kind == "rank" and isinstance(c.get("rank"), int):
        member = f"rank {c['rank']}"
        return member, member + (f" (GPU {device})" if device is not None else "")
    if c.get("host") is None:
        return None, ""
    host = str(c["host"])
    return host, f"host {host}" if device is None else f"device {device} of {host}"


def culprits(findings: list[Finding], member_kind: str) -> Culprits:
    """Per finding kind, the culprits the findings name (in their order) with each one's summary."""
    out: Culprits = {}
    for f in findings:
        member, who = culprit_of(f, member_kind)
        if member is not None:
            out.setdefault(f.kind, {}).setdefault(who, f.summary)
    return out


def _join(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def news(a: Culprits, b: Culprits) -> list[str]:
    """What changed in who is blamed, per finding kind: "the straggler moved from device 1 of host1
    to device 1 of host2", "now a straggler: …", "no more straggler (was host host1)", "… is now a
    straggler too", "… is no longer a straggler". Empty when the same members are blamed."""
    out = []
    for kind in sorted(set(a) | set(b)):
        was, now = a.get(kind, {}), b.get(kind, {})
        gone, came = [w for w in was if w not in now], [w for w in now if w not in was]
        if gone and came:
            out.append(f"the {kind}{'s' if len(gone) > 1 else ''} moved from {_join(gone)} to {_join(came)}")
        elif came and was:
            out.append(f"{_join(came)} {'is' if len(came) == 1 else 'are'} now a {kind} too")
        elif came:
            out.append(f"now a {kind}: {now[came[0]].split(';')[0]}" if len(came) == 1
                       else f"now {len(came)} {kind}s: {_join(came)}")
        elif gone and now:
            out.append(f"{_join(gone)} {'is' if len(gone) == 1 else 'are'} no longer a {kind}")
        elif gone:
            out.append(f"no more {kind} (was {_join(gone)})")
    return out
