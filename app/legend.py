"""The bottleneck legend: a swatch and a name per class the trace has, shown in the status bar
for as long as the timeline is coloured by bottleneck (B), so the colours can be read at any
time, and what the classes rest on (hardware counters, or names, kinds and shapes)."""

from __future__ import annotations

from accelview.model.analysis.ops import CLASS_COLOURS, OTHER_COLOUR
from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget

from .theme import Theme

NAMES = {"compute": "compute", "memory": "memory", "latency": "latency", "transfer": "transfer",
         "communication": "communication", "wait": "wait", "unknown": "unknown op"}


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
        self.entries: dict[str, tuple[QLabel, QLabel]] = {}
        entries = [(NAMES[c], i) for c, i in CLASS_COLOURS.items()] + [("host · other", OTHER_COLOUR)]
        for name, _ in entries:
            sw = QLabel()
            sw.setFixedSize(12, 12)
            text = QLabel(name)
            self.swatches[name] = sw
            self.entries[name] = (sw, text)
            lay.addWidget(sw)
            lay.addWidget(text)
            lay.addSpacing(4)
        self.evidence = QLabel()
        lay.addWidget(self.evidence)
        self._indexes = dict(entries)
        self.set_theme(theme)

    def show_classes(self, present: set[str], evidence: str) -> None:
        """Show the swatches of the classes the trace's ops have (and 'host · other'), and what
        the classes rest on."""
        for cls, name in NAMES.items():
            for w in self.entries[name]:
                w.setVisible(cls in present)
        self.evidence.setText("(from counters)" if evidence.startswith("from") else "(no counters)"
                              if evidence.startswith("no hardware") else "(partly from counters)")
        self.setToolTip(f"Colour by bottleneck (B): each device op in the colour of its class; {evidence}")
        self.layout().activate()
        self.setMinimumWidth(self.sizeHint().width())  # whole in the status bar, beside a long message

    def set_theme(self, theme: Theme) -> None:
        """Paint the swatches in the theme's slice palette (the colours the timeline uses)."""
        palette = theme.slice_colours
        for name, sw in self.swatches.items():
            sw.setStyleSheet(f"background: {palette[self._indexes[name]].name()}; border: 1px solid {theme.dim};")

    def colour_of(self, name: str) -> str:
        """The swatch colour of a class name (for tests)."""
        return self.swatches[name].styleSheet().split("background: ")[1].split(";")[0]
