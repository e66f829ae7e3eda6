"""Pallas kernels against jnp on XLA:CPU, each called back to back (no alternation with other
backends: XLA's time depends on what ran just before it, so pallas_kernels.py's alternating
rounds can flatter insitu): the blocked matmul 1024^3 (blocks 512 and 128, beside insitu's own
dot, jnp's `a @ b` under insitu.jax.jit), the layer norm and the softmax (4096x1024 f32, 256-row
blocks). Prints the median and the best of 40 calls (10 for the matmuls) per backend, twice.

    PYTHONPATH=build/python $(scripts/python-env)/bin/python bench/python/pallas_steady.py [--only NAME,...]
"""
import argparse
import os
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import insitu.jax
import pallas_kernels as kernels


def timed(fn, calls):
    jax.block_until_ready(fn())
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, min(times) * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="", help="comma-separated: matmul-512,matmul-128,layernorm,softmax")
    options = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = jnp.asarray(rng.standard_normal((4096, 1024)), jnp.float32)
    x, y = (jnp.asarray(rng.standard_normal((1024, 1024)), jnp.float32) for _ in range(2))
    cases = [(f"matmul-{block}", lambda threads, block=block: kernels.matmul(block, False), (x, y),
              lambda a, b: a @ b, 10) for block in (512, 128)]
    cases += [(name, lambda threads, op=op: kernels.by_rows(op, 256, False), (rows,), op, 40)
              for name, op in (("layernorm", kernels.jnp_layernorm), ("softmax", kernels.jnp_softmax))]
    only = set(filter(None, options.only.split(",")))
    threads = insitu.default_threads or os.cpu_count()
    for name, make, args, plain_op, calls in cases:
        if only and name not in only:
            continue
        two = insitu.jax.jit(make(None))
        one = insitu.jax.jit(make(1), threads=1)
        plain = jax.jit(plain_op)
        own = insitu.jax.jit(plain_op) if name.startswith("matmul") else None
        for _ in range(2):
            (a, a_best), (b, b_best), (c, c_best) = (timed(lambda: two(*args), calls), timed(lambda: one(*args), calls),
                                                     timed(lambda: plain(*args), calls))
            line = (f"{name:10s} insitu {threads} threads {a:.2f} ms (best {a_best:.2f})  "
                    f"1 thread {b:.2f} ({b_best:.2f})  jnp on XLA {c:.2f} ({c_best:.2f})  "
                    f"insitu/jnp {a / c:.2f}x  1 thread/{threads} {b / a:.2f}x")
            if own is not None:
                d, d_best = timed(lambda: own(*args), calls)
                line += f"  insitu's own dot {d:.2f} ({d_best:.2f}), insitu/own dot {a / d:.2f}x"
            print(line, flush=True)


if __name__ == "__main__":
    main()
