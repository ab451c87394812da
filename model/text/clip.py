"""Text as the app shows it: a name of any length clipped before it is measured or drawn (a 50 MB
name made the timeline lay out 50 MB of glyphs: 3.5 GB and a minute per frame)."""

from __future__ import annotations

MAX_SHOWN_CHARS = 500  # far more than any lane, label or panel row shows


def clip(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """``text`` cut to ``limit`` characters (the last one an ellipsis) when it is longer."""
    return text if len(text) <= limit else text[:limit - 1] + "…"
