"""Pallas grid steps on threads: insitu's lowering proves from the index maps, evaluated over the
whole grid, which leading grid axes are independent (python/insitu/pallas.py), and the runtime
runs their points on the pool's workers, each with its own counter, scratch and block values
(src/insitu/analysis/parallel_grid.h). Each kernel is checked against JAX's interpret mode,
and where the steps may not run on threads, stats and explain say why."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.experimental import pallas as pl  # noqa: E402
from jax.experimental.pallas import tpu as pltpu  # noqa: E402

import insitu.jax  # noqa: E402


def _run(make_call, *args, threads=2, donate=(), exact=True):
    """make_call(interpret) under interpret mode and under insitu on `threads` threads: they agree;
    returns insitu's kernel stats entry and its explain text."""
    expected = jax.jit(make_call(True))(*args)
    fn = insitu.jax.jit(make_call(False), threads=threads, donate_argnums=donate)
    executable = fn.executable(*args)
    for _ in range(3):
        actual = fn(*[jnp.array(a) for a in args])
        for e, a in zip(jax.tree_util.tree_leaves(expected), jax.tree_util.tree_leaves(actual)):
            if exact:
                np.testing.assert_array_equal(np.asarray(a), np.asarray(e))
            else:
                np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=2e-5, atol=2e-5)
    (kernel,) = executable.stats["pallas_kernels"]
    return kernel, executable.explain()


def rows_call(kernel, rows=4, **params):
    def make(interpret):
        def call(x):
            spec = pl.BlockSpec((rows, x.shape[1]), lambda i: (i, 0))
            return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(x.shape[0] // rows,),
                                  in_specs=[spec], out_specs=spec, interpret=interpret, **params)(x)
        return call
    return make


def softmax_kernel(x_ref, o_ref):
    x = x_ref[...]
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    o_ref[...] = e / jnp.sum(e, axis=-1, keepdims=True)


X = jnp.asarray(np.random.default_rng(0).standard_normal((32, 64)), jnp.float32)


def test_independent_rows_run_on_threads():
    kernel, explained = _run(rows_call(softmax_kernel), X, exact=False)
    assert kernel["parallel_axes"] == [0] and kernel["in_order_because"] is None, kernel
    assert kernel["steps"] == 8
    assert "grid axis 0 on threads" in explained, explained


def test_on_one_thread_the_steps_run_in_order_and_say_so():
    kernel, _ = _run(rows_call(softmax_kernel), X, threads=1, exact=False)
    assert kernel["parallel_axes"] == [] and kernel["in_order_because"] == "it ran on one thread", kernel


def test_a_reduction_axis_stays_in_order_inside_each_worker():
    """A blocked matmul accumulating over k: the output block of (i, j) is written by every k, so
    only i and j are independent; each worker runs its (i, j)'s k steps in order."""
    def kernel(x_ref, y_ref, o_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)

        o_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    def make(interpret, block=16):
        def call(x, y):
            n = x.shape[0]
            return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((n, n), jnp.float32),
                                  grid=(n // block, n // block, n // block),
                                  in_specs=[pl.BlockSpec((block, block), lambda i, j, k: (i, k)),
                                            pl.BlockSpec((block, block), lambda i, j, k: (k, j))],
                                  out_specs=pl.BlockSpec((block, block), lambda i, j, k: (i, j)),
                                  interpret=interpret)(x, y)
        return call

    y = jnp.asarray(np.random.default_rng(1).standard_normal((64, 64)), jnp.float32)
    kernel, _ = _run(make, y * 0.5, y, exact=False)
    assert kernel["parallel_axes"] == [0, 1], kernel


def test_a_step_reading_the_block_its_neighbour_writes_runs_in_order():
    """In place, step i reads the 8 rows of block i // 2 and writes the 4 rows of block i of one
    aliased array: step 2m + 1 reads what step 2m wrote, so the steps are not independent."""
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[0:4, :] + x_ref[4:8, :]

    def make(interpret):
        def call(x):
            return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(x.shape[0] // 4,),
                                  in_specs=[pl.BlockSpec((8, x.shape[1]), lambda i: (i // 2, 0))],
                                  out_specs=pl.BlockSpec((4, x.shape[1]), lambda i: (i, 0)),
                                  input_output_aliases={0: 0}, interpret=interpret)(x)
        return call

    kernel, explained = _run(make, X)
    assert kernel["parallel_axes"] == [], kernel
    assert "touch one element" in kernel["in_order_because"], kernel
    assert "steps in order: two of its grid's leading points touch one element" in explained


def test_every_step_writing_one_block_runs_in_order():
    def kernel(x_ref, o_ref):
        @pl.when(pl.program_id(0) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)

        o_ref[...] += x_ref[...]

    def make(interpret):
        def call(x):
            return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((4, x.shape[1]), x.dtype),
                                  grid=(x.shape[0] // 4,), in_specs=[pl.BlockSpec((4, x.shape[1]), lambda i: (i, 0))],
                                  out_specs=pl.BlockSpec((4, x.shape[1]), lambda i: (0, 0)), interpret=interpret)(x)
        return call

    kernel, _ = _run(make, X, exact=False)
    assert kernel["parallel_axes"] == [] and "touch one element" in kernel["in_order_because"], kernel


def test_index_maps_reading_scalar_prefetch_run_in_order():
    def kernel(order_ref, x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0

    def make(interpret):
        def call(order, x):
            spec = pl.BlockSpec((4, x.shape[1]), lambda i, order: (order[i], 0))
            grid_spec = pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, grid=(x.shape[0] // 4,), in_specs=[spec],
                                                     out_specs=spec)
            return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid_spec=grid_spec,
                                  interpret=interpret)(order, x)
        return call

    kernel, _ = _run(make, jnp.arange(8, dtype=jnp.int32)[::-1], X)
    assert kernel["parallel_axes"] == [] and "scalar-prefetch" in kernel["in_order_because"], kernel


def scratch_call(semantics):
    """Rows of x summed through a scratch row that each step resets: independent in fact, but
    the scratch persists, so only an axis the kernel declares parallel may run on threads."""
    def kernel(x_ref, o_ref, acc_ref):
        acc_ref[...] = jnp.zeros_like(acc_ref)

        def body(j, carry):
            acc_ref[...] += x_ref[j, :]
            return carry

        lax.fori_loop(0, x_ref.shape[0], body, 0)
        o_ref[...] = acc_ref[...][None, :]

    def make(interpret):
        params = {} if semantics is None else {"compiler_params": pltpu.CompilerParams(dimension_semantics=semantics)}

        def call(x):
            return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((x.shape[0] // 4, x.shape[1]), x.dtype),
                                  grid=(x.shape[0] // 4,), in_specs=[pl.BlockSpec((4, x.shape[1]), lambda i: (i, 0))],
                                  out_specs=pl.BlockSpec((1, x.shape[1]), lambda i: (i, 0)),
                                  scratch_shapes=[pltpu.VMEM((x.shape[1],), jnp.float32)], interpret=interpret,
                                  **params)(x)
        return call
    return make


def test_scratch_runs_on_threads_only_along_axes_declared_parallel():
    kernel, _ = _run(scratch_call(None), X, exact=False)
    assert kernel["parallel_axes"] == [] and "scratch persists" in kernel["in_order_because"], kernel
    kernel, _ = _run(scratch_call(("arbitrary",)), X, exact=False)
    assert kernel["parallel_axes"] == [], kernel
    kernel, _ = _run(scratch_call(("parallel",)), X, exact=False)
    assert kernel["parallel_axes"] == [0], kernel


def test_vmapped_pallas_call_runs_its_batch_on_threads():
    def make(interpret):
        return jax.vmap(rows_call(softmax_kernel)(interpret))

    kernel, _ = _run(make, X.reshape(4, 8, 64), exact=False)
    assert kernel["parallel_axes"] == [0, 1], kernel


def test_donated_in_place_kernel_on_threads_writes_its_own_buffer():
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 3.0

    def make(interpret):
        def call(x):
            spec = pl.BlockSpec((4, x.shape[1]), lambda i: (i, 0))
            return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(x.shape[0] // 4,),
                                  in_specs=[spec], out_specs=spec, input_output_aliases={0: 0},
                                  interpret=interpret)(x)
        return call

    kernel, _ = _run(make, X, donate=(0,))
    assert kernel["parallel_axes"] == [0] and kernel["bytes_copied"] == 0, kernel


def _half_row_update(rows):
    """Step i reads row i of x whole and writes its first half (x aliased to the output, the two
    refs' blocks of different shapes): independent rows, proven by pairwise comparison."""
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[:, :8] * 2.0

    def make(interpret):
        def call(x):
            return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(rows,),
                                  in_specs=[pl.BlockSpec((1, 16), lambda i: (i, 0))],
                                  out_specs=pl.BlockSpec((1, 8), lambda i: (i, 0)),
                                  input_output_aliases={0: 0}, interpret=interpret)(x)
        return call
    return make


def test_blocks_of_two_shapes_are_compared_at_any_grid_size():
    """Boxes of several shapes are swept along a dimension, not compared pairwise: 1,200 steps
    (2,400 boxes, once past the old pairwise limit) are proven independent too."""
    for rows in (64, 1200):
        x = jnp.asarray(np.arange(rows * 16).reshape(rows, 16), jnp.float32)
        kernel, _ = _run(_half_row_update(rows), x)
        assert kernel["parallel_axes"] == [0], kernel


def test_the_sweep_gives_up_past_its_pair_limit_and_says_not_proven():
    from insitu.pallas_footprints import conflicts

    # eight steps, each writing one column of an [8, 8] array: every pair overlaps along rows,
    # none along columns; sweeping along columns finds no candidate pair
    starts = np.stack([np.zeros(8, np.int64), np.arange(8)], axis=1)
    outer = np.arange(8)
    assert conflicts([(starts, (8, 1), True)], outer) is False
    # one box per step that overlaps every other along both dimensions (a diagonal band): with a
    # limit of 4 pairs the answer is "not proven" (None), with room, a conflict
    band = np.stack([np.arange(8), np.arange(8)], axis=1)
    assert conflicts([(band, (3, 3), True)], outer, max_pairs=4) is None
    assert conflicts([(band, (3, 3), True)], outer) is True
    # reads alone never conflict; one step's own boxes never conflict with each other
    assert conflicts([(band, (3, 3), False)], outer) is False
    assert conflicts([(band, (3, 3), True)], np.zeros(8, np.int64)) is False
