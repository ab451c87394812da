"""``python -m accelview.app.cli``: the ``accelview`` command."""

import sys

from .main import cli

if __name__ == "__main__":  # worker processes (the fleet's LocalCluster) import this module again
    sys.exit(cli())
