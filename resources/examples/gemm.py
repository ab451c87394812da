"""Large GEMMs back to back: the matrix engines run near their peak; every op is compute-bound.

    accelview profile resources/examples/gemm.py -o gemm.h5
"""

from __future__ import annotations

from accelview.capture import sim


def run(m: int = 8192, n: int = 8192, k: int = 8192, iters: int = 20, dtype: str = "bf16") -> None:
    """``iters`` GEMMs of m x n x k back to back, then one synchronize."""
    dev = sim.device(0)
    for _ in range(iters):
        dev.launch("gemm", m=m, n=n, k=k, dtype=dtype)
    dev.synchronize()


if __name__ == "__main__":
    run()
