"""What the tracer and the capture service share: the capture config, the wire frames, the payloads."""
