"""Random Triton-style Pallas kernels (no BlockSpec: every ref its whole array, each grid step
slicing it by pl.program_id), each run by insitu on two threads and by JAX's interpret mode and
compared bit for bit. They exercise the lowering's per-slice independence proof
(python/insitu/pallas_footprints.py), the masked-window discharge (pallas_discharge.py) and the
runtime's parallel grid: a race shows as a value that differs (each kernel runs three times).

    python python/tests/triton_generator.py --seeds 0:1000 [--stop-on-failure] [--verbose]
    python python/tests/triton_generator.py --describe 17

A kernel draws, for a 1-D array of 40-700 elements or a 2-D one of [4-24, 8-40]:

- a grid over blocks of B (the last block ragged or not), and per access a start
  `pid * B + shift` (shift 0 mostly; -1, 1 or B: a neighbour's slice) of size B or B + 1;
- unmasked `ref[pl.ds(...)]` accesses, or masked `plgpu.load`/`plgpu.store` with the mask
  `offsets < n` (the Triton idiom; `other=` or not; a store's mask sometimes with holes);
- 2-D: rows by program id, columns whole, by static halves, or by a fori_loop over chunks;
- extras: a pl.when(pid == k) write of one element, a start read from data (a prefetched
  offset in an input), an aliased input/output (donated or not) read at a neighbour's slice;
- exact arithmetic only (add, subtract, multiply by 2, negate, max), so bits must agree.
"""
from __future__ import annotations

import sys

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

import insitu.jax


class Case:
    def __init__(self, seed):
        rng = np.random.default_rng(seed)
        self.seed = seed
        self.rank = 1 if rng.random() < 0.6 else 2
        if self.rank == 1:
            self.block = int(rng.choice([8, 16, 32, 64]))
            steps = int(rng.integers(2, 12))
            ragged = int(rng.integers(1, self.block)) if rng.random() < 0.35 else 0
            self.shape = (steps * self.block - ragged,)
            self.grid = steps
        else:
            self.block = 1  # a row a step
            self.shape = (int(rng.integers(4, 25)), int(rng.choice([8, 16, 24, 40])))
            self.grid = self.shape[0]
            self.columns = str(rng.choice(["whole", "halves", "loop"]))
        self.masked = self.rank == 1 and rng.random() < 0.4
        self.store_holes = self.masked and rng.random() < 0.3  # the store's mask skips every third lane
        self.other = bool(rng.random() < 0.5)
        self.read_shift = int(rng.choice([0, 0, 0, -1, 1, self.block]))
        self.write_shift = int(rng.choice([0, 0, 0, 0, 0, 1, -1]))
        self.write_size_extra = int(rng.random() < 0.1)
        self.when_write = rng.random() < 0.15
        self.data_start = self.rank == 1 and rng.random() < 0.1
        self.aliased = rng.random() < 0.35
        self.donate = self.aliased and rng.random() < 0.5
        self.op = str(rng.choice(["add", "sub", "double", "neg_max"]))
        self.values = [rng.standard_normal(self.shape).astype(np.float32) for _ in range(2)]

    def describe(self):
        fields = ("rank", "shape", "grid", "block", "masked", "store_holes", "other", "read_shift", "write_shift",
                  "write_size_extra", "when_write", "data_start", "aliased", "donate", "op")
        text = ", ".join(f"{name}={getattr(self, name)}" for name in fields)
        if self.rank == 2:
            text += f", columns={self.columns}"
        return f"seed {self.seed}: {text}"

    def combine(self, x, y):
        if self.op == "add":
            return x + y
        if self.op == "sub":
            return x - y
        if self.op == "double":
            return x * 2.0
        return jnp.maximum(-x, y)

    def kernel(self):
        n, block = self.shape[0], self.block

        def slice_1d(start, size, ref, value=None, store=False):
            if not self.masked:
                if store:
                    ref[pl.ds(start, size)] = value
                    return None
                return ref[pl.ds(start, size)]
            mask = start + jnp.arange(size) < n
            if store and self.store_holes:
                mask = mask & (jnp.arange(size) % 3 != 0)
            if store:
                plgpu.store(ref.at[pl.ds(start, size)], value, mask=mask)
                return None
            return plgpu.load(ref.at[pl.ds(start, size)], mask=mask, other=0.0 if self.other else None)

        def body_1d(x_ref, y_ref, *outs):
            o_ref = outs[-1]
            pid = pl.program_id(0)
            base = pid * block
            if self.data_start:
                base = y_ref[pl.ds(0, 1)].astype(jnp.int32)[0] * 0 + base  # a start that reads data
            size = block + self.write_size_extra
            x = slice_1d(base + self.read_shift, size, x_ref)
            y = slice_1d(base, size, y_ref)
            slice_1d(base + self.write_shift, size, o_ref, self.combine(x, y), store=True)
            if self.when_write:
                @pl.when(pid == self.grid - 1)
                def _():
                    o_ref[pl.ds(0, 1)] = jnp.full((1,), 7.0, jnp.float32)

        def body_2d(x_ref, y_ref, *outs):
            o_ref = outs[-1]
            row = pl.program_id(0)
            width = self.shape[1]
            write_row = jnp.clip(row + self.write_shift, 0, self.shape[0] - 1)
            read_row = jnp.clip(row + self.read_shift, 0, self.shape[0] - 1)
            if self.columns == "whole":
                o_ref[pl.ds(write_row, 1), :] = self.combine(x_ref[pl.ds(read_row, 1), :], y_ref[pl.ds(row, 1), :])
            elif self.columns == "halves":
                half = width // 2
                for first in (0, half):
                    at = pl.ds(first, half)
                    o_ref[pl.ds(write_row, 1), at] = self.combine(x_ref[pl.ds(read_row, 1), at], y_ref[pl.ds(row, 1), at])
            else:
                def chunk(j, carry):
                    at = pl.ds(j * 8, 8)
                    o_ref[pl.ds(write_row, 1), at] = self.combine(x_ref[pl.ds(read_row, 1), at],
                                                                  y_ref[pl.ds(row, 1), at])
                    return carry
                lax.fori_loop(0, width // 8, chunk, 0)
            if self.when_write:
                @pl.when(row == 0)
                def _():
                    o_ref[pl.ds(self.shape[0] - 1, 1), pl.ds(0, 1)] = jnp.full((1, 1), 7.0, jnp.float32)

        return body_1d if self.rank == 1 else body_2d

    def make_call(self, interpret):
        kernel = self.kernel()

        def call(x, y):
            shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
            if self.aliased:  # the output is x itself: read at a neighbour's slice, written at its own
                return pl.pallas_call(kernel, out_shape=shape, grid=(self.grid,), input_output_aliases={0: 0},
                                      interpret=interpret)(x, y)
            return pl.pallas_call(kernel, out_shape=shape, grid=(self.grid,), interpret=interpret)(x, y)
        return call


def run_case(seed, runs=3):
    """("ok", "parallel" or ""), or (a failure kind, what differed)."""
    case = Case(seed)
    args = [jnp.asarray(v) for v in case.values]
    try:
        expected = np.asarray(jax.jit(case.make_call(True))(*args))
    except Exception as error:  # noqa: BLE001 -- a kernel JAX itself refuses is no case
        return "ok", f"skipped ({type(error).__name__})"
    fn = insitu.jax.jit(case.make_call(False), threads=2, donate_argnums=(0,) if case.donate else ())
    try:
        for _ in range(runs):
            actual = np.asarray(fn(*[jnp.array(a) for a in args]))
            if not np.array_equal(actual, expected, equal_nan=True):
                where = np.argwhere(~((actual == expected) | (np.isnan(actual) & np.isnan(expected))))
                return "mismatch", f"{len(where)} elements differ, first at {where[0].tolist()}"
    except Exception as error:  # noqa: BLE001
        return "error", f"{type(error).__name__}: {str(error).strip().splitlines()[0][:300]}"
    kernels = fn.executable(*args).stats.get("pallas_kernels", [])
    return "ok", "parallel" if any(kernel["parallel_axes"] for kernel in kernels) else ""


def main(argv=None):
    from pallas_generator import seed_main  # beside this file

    return seed_main(__doc__, run_case, lambda seed: Case(seed).describe(), argv)


if __name__ == "__main__":
    sys.exit(main())
