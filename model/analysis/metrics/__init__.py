"""The counter taxonomy: base counters, device constants, derived metrics and their units."""
