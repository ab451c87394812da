"""Exporters of a Trace to other tools' formats."""
