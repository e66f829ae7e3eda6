"""Compile time that scales (issue 36): each module lowered once by JAX, then compiled by XLA:CPU
(`lowered.compile()`, once: JAX caches the result) and by insitu (`insitu.compile` of the same
module as HLO text: parse, verify, optimize, buffer assignment, Executable::create; best of
--rounds), in one process.

Rows: a chain of 100,000 adds; a function of 10,000 scalars returning 10,000 (a 10^4-leaf
tuple); a 2,000-leaf tuple (the issue's 0.1 s row); a 48-layer unrolled transformer training
step with Adam (d=256: 576 parameter arrays, and m and v beside them, donated). The issue asks
each row under 2 s and under 0.1x XLA's time, and the 2,000-leaf tuple under 0.1 s.

    $(scripts/python-env)/bin/python bench/python/compile_time.py [--rounds 3] [--only NAME,...]
"""
import argparse
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import insitu

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "peers"))
import measure_xla  # noqa: E402  (the training step and the layer shapes of the real-size rows)


def chain(n):
    def f(x, y):
        for _ in range(n):
            x = x + y
        return x
    spec = jax.ShapeDtypeStruct((4,), jnp.float32)
    return jax.jit(f), (spec, spec)


def scalars(n):
    def f(*xs):
        return tuple(x * 2.0 for x in xs)
    return jax.jit(f), tuple(jax.ShapeDtypeStruct((), jnp.float32) for _ in range(n))


def transformer_training(layers=48, d=256, heads=4, batch=2, tokens=64):
    shapes = measure_xla._gpt_layer_shapes(d)
    params = [{k: np.zeros(s, np.float32) for k, s in shapes.items()} for _ in range(layers)]
    x = np.zeros((batch, tokens, d), np.float32)
    y = np.zeros((batch, tokens, d), np.float32)
    loss = measure_xla.transformer_loss(batch, tokens, d, heads)
    f, args, options, _ = measure_xla._training_step(loss, params, (x, y))
    specs = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype), args)
    return jax.jit(f, **options), specs


ROWS = {
    "chain_100000": lambda: chain(100_000),
    "tuple_10000": lambda: scalars(10_000),
    "tuple_2000": lambda: scalars(2_000),
    "transformer_48_layers": transformer_training,
}


def best(function, rounds):
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="")
    options = parser.parse_args()
    only = [name for name in options.only.split(",") if name]
    print(f"{'module':24s} {'instructions':>12s} {'insitu s':>9s} {'XLA s':>9s} {'ratio':>7s}")
    for name, build in ROWS.items():
        if only and name not in only:
            continue
        jitted, args = build()
        lowered = jitted.lower(*args)
        text = lowered.as_text(dialect="hlo")
        instructions = sum(1 for line in text.splitlines() if " = " in line)
        # insitu first, so that XLA's state after a long compile stays out of insitu's figure: right
        # after XLA's 447 s compile of the 48-layer step, insitu.compile of it took 2.6 s (best of
        # 3), alone in a process minutes later 1.2 s (2026-12-07; the cause not pinned down)
        ours = best(lambda: insitu.compile(text), options.rounds)
        xla = best(lambda: lowered.compile(), 1)  # once: JAX keeps the executable, a second call is a lookup
        print(f"{name:24s} {instructions:12d} {ours:9.3f} {xla:9.3f} {ours / xla:7.3f}", flush=True)


if __name__ == "__main__":
    main()
