"""What runs inside the profiled process: the child's entry point and the tracer that records."""
