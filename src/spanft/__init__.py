"""spanft: Span Fine-tuning for Pre-trained Language Models, reproduced as a DVC pipeline."""

import os

__version__ = "0.1.0"

# Idle OpenMP threads sleep instead of spinning (unless the user chose otherwise). OpenMP reads this once, when
# torch loads it, and every stage imports spanft before torch. With cores shared (a loaded machine, other
# stages or test workers), spinning threads keep the thread they wait for off a core: 2 threads then took 5-10x
# the time of 1 (benchmarks/bench_threads.py); sleeping ones took the time of 1. See spanft.threads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
