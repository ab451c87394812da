"""Analyses over a trace: counter taxonomy and metrics, statistics, bottlenecks, findings.

Every analysis sees only what a real device reports (slices, flows, counters, the device spec);
none reads the simulator's ``truth`` tables.
"""
