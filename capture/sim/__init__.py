"""The accelerator simulator: device specs, PCIe, HBM, op costs and clocks.

The physics lives in small modules, each importable on its own:

- :mod:`.specs` - device presets (``resources/specs/*.json``) and their loader;
- :mod:`.pcie` - per-direction link bandwidth after encoding, TLP and DLLP overhead;
- :mod:`.transfer` - how one host/device copy moves (descriptors, staging, TLPs);
- :mod:`.hbm` - HBM efficiency by access pattern;
- :mod:`.ops` - FLOPs and bytes of each op kind from its shapes;
- :mod:`.costs` - an op's duration, true limiter and hardware counters;
- :mod:`.llm` - the ops of a decoder-only transformer's prefill and decode steps;
- :mod:`.clock` - a device clock with its own frequency, offset and drift.

docs/SIMULATOR.md describes the models and the published figures they agree with.
"""
