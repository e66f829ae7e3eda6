"""The Pallas blocked matmul (pallas_kernels.py's, blocks 128 and 512) against insitu's own dot
(`a @ b` under insitu.jax.jit), 1024^3 f32, in one process: 15 alternating rounds of 3 calls,
median and min per call, and each as a ratio to the dot's.

    PYTHONPATH=build/python:bench/python $(scripts/python-env)/bin/python bench/python/pallas_matmul_vs_dot.py THREADS
"""
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import insitu.jax
import pallas_kernels as pk


def main():
    rng = np.random.default_rng(0)
    x, y = (jnp.asarray(rng.standard_normal((1024, 1024)), jnp.float32) for _ in range(2))
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    runs = {"pallas128": insitu.jax.jit(pk.matmul(128, False), threads=threads),
            "pallas512": insitu.jax.jit(pk.matmul(512, False), threads=threads),
            "dot": insitu.jax.jit(lambda a, b: a @ b, threads=threads)}
    times = {label: [] for label in runs}
    for run in runs.values():
        jax.block_until_ready(run(x, y))
    for _ in range(15):
        for label, run in runs.items():
            start = time.perf_counter()
            for _ in range(3):
                jax.block_until_ready(run(x, y))
            times[label].append((time.perf_counter() - start) / 3 * 1e3)
    dot_median, dot_min = statistics.median(times["dot"]), min(times["dot"])
    for label, values in times.items():
        median, best = statistics.median(values), min(values)
        print(f"{threads} threads {label:10s} median {median:6.2f} ms, min {best:6.2f} ms; "
              f"/ dot: median {median / dot_median:.2f}x, min {best / dot_min:.2f}x")


if __name__ == "__main__":
    main()
