"""Dark and light themes: the colours the painters use and the Qt stylesheet of the widgets."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np
from PySide6.QtGui import QColor

# A 24-colour palette of mid-saturation hues that read on dark and light backgrounds alike.
_PALETTE = (
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#6b9bd1", "#d37295", "#8cd17d", "#f1ce63", "#86bcb6", "#e49444", "#a0cbe8",
    "#5fa2ce", "#c85200", "#7b848f", "#57606c", "#d4a6c8", "#b6992d", "#499894", "#fabfd2",
)


@dataclass(frozen=True)
class Theme:
    """Colours of one theme, as hex strings."""

    name: str
    bg: str
    lane_alt: str
    gutter: str
    header: str
    text: str
    dim: str
    grid: str
    ruler: str
    accent: str
    select: str
    range_fill: str
    mark: str
    search: str

    def c(self, attr: str, alpha: int = 255) -> QColor:
        """A colour of the theme as QColor, optionally translucent (cached: do not modify)."""
        return _colour(getattr(self, attr), alpha)

    @property
    def slice_colours(self) -> list[QColor]:
        """The slice palette as QColors."""
        return [QColor(h) for h in _PALETTE]

    def slice_text(self) -> QColor:
        """Text colour inside slices (dark on the mid-tone palette in both themes)."""
        return QColor("#101418")

    def palette_argb(self) -> np.ndarray:
        """The palette as (N, 3) float RGB rows, for numpy blending."""
        return np.array([[QColor(h).red(), QColor(h).green(), QColor(h).blue()] for h in _PALETTE], np.float32)

    def bg_rgb(self) -> np.ndarray:
        """The lane background as float RGB."""
        q = QColor(self.bg)
        return np.array([q.red(), q.green(), q.blue()], np.float32)


@lru_cache(maxsize=256)
def _colour(hex_rgb: str, alpha: int) -> QColor:
    col = QColor(hex_rgb)
    col.setAlpha(alpha)
    return col


DARK = Theme("dark", bg="#1b1e23", lane_alt="#20242a", gutter="#23272e", header="#2b3038", text="#e6e9ee",
             dim="#9aa3ad", grid="#363c45", ruler="#262a31", accent="#ffd24a", select="#ffffff",
             range_fill="#3ddc97", mark="#c678dd", search="#ff5ab4")
LIGHT = Theme("light", bg="#fbfbfc", lane_alt="#f1f3f5", gutter="#eceff2", header="#dde2e8", text="#1d232a",
              dim="#5b6570", grid="#d3d8de", ruler="#e6e9ed", accent="#d9480f", select="#000000",
              range_fill="#2b9a66", mark="#9c36b5", search="#d6336c")
THEMES = {"dark": DARK, "light": LIGHT}


def stylesheet(name: str) -> str:
    """The widgets' stylesheet for a theme (resources/style-<name>.qss), empty if missing."""
    try:
        return resources.files("accelview.resources").joinpath(f"style-{name}.qss").read_text("utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        return ""
