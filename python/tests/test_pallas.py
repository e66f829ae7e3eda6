"""Pallas kernels (pl.pallas_call without interpret=) compiled by insitu.jax.jit: each checked
against JAX's interpret mode on XLA:CPU, bit for bit where no sum is reordered, aliasing with
and without donation in place, and the kernels insitu cannot run refused with their name."""
import functools

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.experimental import pallas as pl  # noqa: E402

import insitu  # noqa: E402
import insitu.jax  # noqa: E402


def _both(make_call, *args, donate=(), exact=True, tolerance=1e-5):
    """Runs make_call(interpret) under jax.jit with interpret=True and under insitu.jax.jit with
    interpret=False; checks they agree and returns insitu's result and executable."""
    expected = jax.jit(make_call(True))(*args)
    fn = insitu.jax.jit(make_call(False), donate_argnums=donate)
    executable = fn.executable(*args)
    copies = [jnp.array(a) for a in args]  # donation deletes the arguments
    actual = fn(*copies)
    for e, a in zip(jax.tree_util.tree_leaves(expected), jax.tree_util.tree_leaves(actual)):
        if exact:
            np.testing.assert_array_equal(np.asarray(a), np.asarray(e))
        else:
            np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=tolerance, atol=tolerance)
    return actual, executable


def plus_one_kernel(x_ref, o_ref):
    o_ref[:] = o_ref[:] + 1


def seed_call(interpret, dtype_shape=(8, 128)):
    def call(x):
        return pl.pallas_call(plus_one_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              input_output_aliases={0: 0}, interpret=interpret)(x)
    return call


@pytest.mark.parametrize("dtype", [jnp.int32, jnp.float32, jnp.bfloat16])
def test_seed_kernel_as_written_updates_the_donated_input_in_place(dtype):
    x = jnp.arange(8 * 128).reshape(8, 128).astype(dtype)
    expected = np.asarray(x) + np.asarray(1, dtype=np.asarray(x).dtype)
    fn = insitu.jax.jit(seed_call(False), donate_argnums=[0])
    out = fn(x)
    np.testing.assert_array_equal(np.asarray(out), expected)
    stats = fn.executable(out).stats
    assert stats["bytes_copied"] == 0 and stats["copies_in_module"] == [], stats
    assert "0 copies" in fn.executable(out).explain()
    assert x.is_deleted()


def test_plain_jax_jit_keeps_jax_meaning_of_pallas_on_a_cpu():
    with pytest.raises(Exception, match="interpret"):
        jax.jit(seed_call(False))(jnp.zeros((8, 128))).block_until_ready()


def test_blocked_matmul_with_an_accumulating_reduction_axis():
    def kernel(x_ref, y_ref, o_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)

        o_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    def make(interpret, block=32):
        def call(x, y):
            m, k = x.shape
            n = y.shape[1]
            return pl.pallas_call(
                kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), grid=(m // block, n // block, k // block),
                in_specs=[pl.BlockSpec((block, block), lambda i, j, kk: (i, kk)),
                          pl.BlockSpec((block, block), lambda i, j, kk: (kk, j))],
                out_specs=pl.BlockSpec((block, block), lambda i, j, kk: (i, j)), interpret=interpret)(x, y)
        return call

    rng = np.random.default_rng(0)
    x, y = (jnp.asarray(rng.standard_normal((64, 96)), jnp.float32), jnp.asarray(rng.standard_normal((96, 64)), jnp.float32))
    _both(make, x, y, exact=False)


def test_row_layer_norm_with_vmapped_pallas_call():
    def kernel(x_ref, o_ref):
        x = x_ref[...]
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
        o_ref[...] = (x - mean) * lax.rsqrt(var + 1e-5)

    def make(interpret):
        def one(x):
            return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(x.shape[0] // 4,),
                                  in_specs=[pl.BlockSpec((4, x.shape[1]), lambda i: (i, 0))],
                                  out_specs=pl.BlockSpec((4, x.shape[1]), lambda i: (i, 0)), interpret=interpret)(x)
        return jax.vmap(one)

    x = jnp.asarray(np.random.default_rng(1).standard_normal((3, 16, 32)), jnp.float32)
    _both(make, x, exact=False)


def test_kv_cache_row_written_through_scalar_prefetch_in_place():
    """A cache update kernel: the output's index map reads the position (scalar prefetch); the
    cache is aliased and donated, so only the new row is written."""
    def kernel(pos_ref, new_ref, cache_ref, out_ref):
        out_ref[...] = new_ref[...]

    def make(interpret):
        def call(pos, new, cache):
            spec = pltpu_grid_spec(cache)
            return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(cache.shape, cache.dtype), grid_spec=spec,
                                  input_output_aliases={2: 0}, interpret=interpret)(pos, new, cache)
        return call

    def pltpu_grid_spec(cache):
        from jax.experimental.pallas import tpu as pltpu

        rows, width = cache.shape
        return pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1, grid=(1,),
            in_specs=[pl.BlockSpec((1, width), lambda i, pos: (0, 0)), pl.BlockSpec(memory_space=pl.ANY)],
            out_specs=pl.BlockSpec((1, width), lambda i, pos: (pos[0], 0)))

    cache = jnp.asarray(np.random.default_rng(2).standard_normal((64, 16)), jnp.float32)
    new = jnp.full((1, 16), 7.0, jnp.float32)
    out, executable = _both(make, jnp.array([5], jnp.int32), new, cache, donate=(2,))
    assert executable.stats["bytes_copied"] == 0
    assert executable.stats["bytes_written"] < cache.size * 4 // 4, executable.stats  # not the whole cache


def test_ragged_grid_reads_and_writes_only_inside_the_array():
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0 + 1.0

    def make(interpret):
        def call(x):
            return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(3,),
                                  in_specs=[pl.BlockSpec((4,), lambda i: (i,))], out_specs=pl.BlockSpec((4,), lambda i: (i,)),
                                  interpret=interpret)(x)
        return call

    _both(make, jnp.arange(10, dtype=jnp.float32))


def test_in_kernel_loop_scratch_and_squeezed_blocks():
    from jax.experimental.pallas import tpu as pltpu

    def kernel(x_ref, o_ref, acc_ref):
        acc_ref[...] = jnp.zeros_like(acc_ref)

        def body(j, carry):
            acc_ref[...] += x_ref[j, :] * (j + 1).astype(jnp.float32)
            return carry

        lax.fori_loop(0, x_ref.shape[0], body, 0)
        o_ref[...] = acc_ref[...]

    def make(interpret):
        def call(x):
            return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((x.shape[0], x.shape[2]), x.dtype),
                                  grid=(x.shape[0],),
                                  in_specs=[pl.BlockSpec((None, x.shape[1], x.shape[2]), lambda i: (i, 0, 0))],
                                  out_specs=pl.BlockSpec((None, x.shape[2]), lambda i: (i, 0)),
                                  scratch_shapes=[pltpu.VMEM((x.shape[2],), jnp.float32)], interpret=interpret)(x)
        return call

    _both(make, jnp.asarray(np.random.default_rng(3).standard_normal((3, 5, 8)), jnp.float32), exact=False)


def test_aliased_input_without_donation_leaves_the_caller_array():
    x = jnp.arange(16, dtype=jnp.float32).reshape(2, 8)
    out = insitu.jax.jit(seed_call(False))(x)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(x) + 1)
    np.testing.assert_array_equal(np.asarray(x), np.arange(16, dtype=np.float32).reshape(2, 8))


def test_a_block_kind_insitu_lacks_is_refused_naming_the_kernel():
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    def call(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(2,),
                              in_specs=[pl.BlockSpec((pl.Element(4),), lambda i: (i * 4,))],
                              out_specs=pl.BlockSpec((4,), lambda i: (i,)), name="element_copy")(x)

    with pytest.raises(Exception, match="element_copy.*Element"):
        insitu.jax.jit(call)(jnp.arange(8, dtype=jnp.float32))


def test_make_kernel_from_pallas_on_torch_tensors():
    torch = pytest.importorskip("torch")
    import insitu.torch

    def scale_kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 3.0

    def two_kernels(x, y):  # jnp code around two pallas_calls: compiled whole
        a = pl.pallas_call(scale_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
        b = pl.pallas_call(scale_kernel, out_shape=jax.ShapeDtypeStruct(y.shape, y.dtype))(y + 1.0)
        return a - 1.0, jnp.sum(b)

    pt = insitu.torch.make_kernel_from_pallas(two_kernels, lambda x, y: [(x.shape, x.dtype), ((), y.dtype)])
    x, y = torch.arange(6, dtype=torch.float32).reshape(2, 3), torch.ones(4)
    a, b = pt(x, y)
    assert torch.equal(a, x * 3 - 1) and b.item() == 24.0
    assert torch.equal(x, torch.arange(6, dtype=torch.float32).reshape(2, 3))  # not donated: unchanged

    @functools.partial(jax.jit, donate_argnums=[0])
    def add_in_place(cache, row):
        def kernel(c_ref, r_ref, o_ref):
            o_ref[0, :] = c_ref[0, :] + r_ref[...]
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(cache.shape, cache.dtype),
                              input_output_aliases={0: 0})(cache, row)

    update = insitu.torch.make_kernel_from_pallas(add_in_place, lambda c, r: [(c.shape, c.dtype)])
    cache, row = torch.zeros(3, 5), torch.arange(5, dtype=torch.float32)
    pointer = cache.data_ptr()
    out = update(cache, row)
    assert cache[0].tolist() == [0, 1, 2, 3, 4] and cache[1:].abs().sum() == 0 and cache.data_ptr() == pointer
    assert out.data_ptr() == pointer and update.executable.stats["bytes_copied"] == 0

    wrong = insitu.torch.make_kernel_from_pallas(add_in_place, lambda c, r: [(r.shape, c.dtype)])
    with pytest.raises(insitu.Error, match="output_shape_dtype_fn says"):
        wrong(torch.zeros(3, 5), row)
