"""Clock alignment: every clock domain of a capture (devices, hosts) placed on the reference
clock (host0's) from its sync samples, tightened by what the trace proves, with error bounds.

- :mod:`.brackets` - sync exchanges as (parent before, domain, parent after) and the low-delay ones;
- :mod:`.fit` - one domain against its parent: steps, a robust offset and drift per segment;
- :mod:`.segments` - the fitted segments, composing them along a chain, mapping timestamps;
- :mod:`.causal` - narrowing host offsets with sends before receives and collective arrivals
  before ends.

Pure numpy; the convention per segment is ``ref = (t_domain − offset) / (1 + drift·1e-6)``.
"""

from .brackets import Brackets, low_delay
from .fit import ClockFit, StepWindow, fit_clock
from .segments import ClockMap, Segment, compose

__all__ = ["Brackets", "ClockFit", "ClockMap", "Segment", "StepWindow", "compose", "fit_clock", "low_delay"]
