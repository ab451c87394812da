"""Clock alignment: every clock domain of a capture (devices, hosts) placed on the reference
clock (host0's) from its sync samples, tightened by what the trace proves, with error bounds.

- :mod:`.brackets` - sync exchanges as (parent before, domain, parent after) and the low-delay ones;
- :mod:`.fit` - one domain against its parent: steps, a robust offset and drift per segment;
- :mod:`.segments` - the fitted segments, composing them along a chain, mapping timestamps;
- :mod:`.chain` - every domain onto the reference (a parent's steps placed by its children);
- :mod:`.causal` - narrowing host offsets with sends before receives and collective arrivals
  before ends;
- :mod:`.rows` - maps as rows of a capture's ``clock_segments`` table and back;
- :mod:`.ranks` - the ranks of a multi-rank PyTorch trace aligned by their NCCL kernels.

Pure numpy; the convention per segment is ``ref = (t_domain − offset) / (1 + drift·1e-6)``.
"""

from .brackets import Brackets, low_delay
from .causal import Precedence, collective_precedences, tighten
from .chain import align_chain, align_domains
from .fit import ClockFit, StepWindow, fit_clock
from .segments import ClockMap, Segment, compose

__all__ = ["Brackets", "ClockFit", "ClockMap", "Precedence", "Segment", "StepWindow", "align_chain", "align_domains",
           "collective_precedences", "compose", "fit_clock", "low_delay", "tighten"]
