"""The bottleneck legend: a swatch and a name per class, shown in the status bar for as long
as the timeline is coloured by bottleneck (B), so the colours can be read at any time."""

from __future__ import annotations

from accelview.model.analysis.ops import CLASS_COLOURS, OTHER_COLOUR
from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget

from .theme import Theme

NAMES = {"compute": "compute", "memory": "memory", "latency": "latency", "unknown": "unknown op"}


class BottleneckLegend(QWidget):
    """Swatches of compute, memory, latency, unknown ops and everything else (host, transfers)."""

    def __init__(self, theme: Theme, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setToolTip("Colour by bottleneck (B): each device op in the colour of its class")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(6, 0, 6, 0)
        lay.setSpacing(4)
        lay.addWidget(QLabel("Bottleneck:"))
        self.swatches: dict[str, QLabel] = {}
        entries = [(NAMES[c], i) for c, i in CLASS_COLOURS.items()] + [("host · transfers", OTHER_COLOUR)]
        for name, _ in entries:
            sw = QLabel()
            sw.setFixedSize(12, 12)
            self.swatches[name] = sw
            lay.addWidget(sw)
            lay.addWidget(QLabel(name))
            lay.addSpacing(6)
        self._indexes = dict(entries)
        self.set_theme(theme)

    def set_theme(self, theme: Theme) -> None:
        """Paint the swatches in the theme's slice palette (the colours the timeline uses)."""
        palette = theme.slice_colours
        for name, sw in self.swatches.items():
            sw.setStyleSheet(f"background: {palette[self._indexes[name]].name()}; border: 1px solid {theme.dim};")

    def colour_of(self, name: str) -> str:
        """The swatch colour of a class name (for tests)."""
        return self.swatches[name].styleSheet().split("background: ")[1].split(";")[0]
