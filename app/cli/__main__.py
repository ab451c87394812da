"""``python -m accelview.app.cli``: the ``accelview`` command."""

import sys

from .main import cli

sys.exit(cli())
