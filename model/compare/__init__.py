"""Comparing two runs: iterations and ops matched between them, per-iteration statistics with
rank tests, and the one-line answer to "what changed, and why" (``accelview diff``)."""
