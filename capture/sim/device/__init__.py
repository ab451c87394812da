"""The simulated device: specs, clocks, costs, the event-driven engine, HBM, PCIe and counters."""
