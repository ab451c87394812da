"""The HDF5 capture format: reading, writing, finalizing, and the out-of-memory helpers behind them."""
