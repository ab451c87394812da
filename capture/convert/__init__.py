"""Device and host records → capture rows: tracks, slices, flows, counters, clock samples, truth."""
