"""The runtime API a script calls: sessions, devices, streams, buffers, copies and graphs."""
