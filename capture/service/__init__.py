"""What runs beside the profiled process: starts it, reads its records, owns the capture file."""
