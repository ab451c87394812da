"""One small simulated fleet for the fleet tests: 4 hosts × 2 devices of dp-straggler."""

from __future__ import annotations

import pytest
from fleet_tasks import write_fleet


@pytest.fixture(scope="session")
def fleet(tmp_path_factory):
    """The host captures, host0 … host3 (host1's device 1 the straggler), in a folder of their own."""
    return write_fleet(tmp_path_factory.mktemp("fleet"))
