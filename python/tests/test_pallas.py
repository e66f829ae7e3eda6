"""Pallas kernels (pl.pallas_call without interpret=) compiled by insitu.jax.jit: each checked
against JAX's interpret mode on XLA:CPU, bit for bit where no sum is reordered, aliasing with
and without donation in place, and the kernels insitu cannot run refused with their name; plus
60 seeds of pallas_generator.py's random kernels (its docstring lists what they combine)."""
import functools
import pathlib
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.experimental import pallas as pl  # noqa: E402

import insitu  # noqa: E402
import insitu.jax  # noqa: E402
import pallas_generator  # noqa: E402  (beside this file)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench" / "python"))
import pallas_kernels  # noqa: E402  (bench/python: the benchmark's kernels)


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


def test_masked_loads_and_stores_with_other_triton_style():
    from jax.experimental.pallas import triton as plgpu

    def kernel(x_ref, o_ref):
        i = pl.program_id(0)
        offsets = i * 8 + jnp.arange(8)
        mask = offsets < 13
        x = plgpu.load(x_ref.at[pl.ds(0, 8)], mask=mask, other=-1.0)
        plgpu.store(o_ref.at[pl.ds(0, 8)], jnp.exp(x) + 1.0, mask=mask)

    def make(interpret):
        def call(x):
            return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((16,), x.dtype), grid=(2,),
                                  in_specs=[pl.BlockSpec((8,), lambda i: (i,))],
                                  out_specs=pl.BlockSpec((8,), lambda i: (i,)), interpret=interpret)(x)
        return call

    x = jnp.asarray(np.random.default_rng(5).standard_normal(16), jnp.float32)
    expected = jax.jit(make(True))(x)
    actual = insitu.jax.jit(make(False))(x)
    # the masked-off tail is never written: both leave what Pallas leaves (uninitialized)
    np.testing.assert_allclose(np.asarray(actual)[:13], np.asarray(expected)[:13], rtol=1e-6)


def test_strided_reads_cond_and_a_dynamic_while_in_the_body():
    def kernel(n_ref, x_ref, o_ref, even_ref):
        even_ref[...] = x_ref[pl.ds(0, 4, stride=2)]  # every other element

        def body(carry):
            k, total = carry
            return k + 1, total + x_ref[k]

        _, total = lax.while_loop(lambda c: c[0] < n_ref[0], body, (0, jnp.float32(0)))
        o_ref[...] = lax.cond(total > 0, lambda: x_ref[...] * total, lambda: x_ref[...] - total)

    def make(interpret):
        def call(n, x):
            from jax.experimental.pallas import tpu as pltpu

            spec = pltpu.PrefetchScalarGridSpec(
                num_scalar_prefetch=1, grid=(1,), in_specs=[pl.BlockSpec((8,), lambda i, n: (0,))],
                out_specs=[pl.BlockSpec((8,), lambda i, n: (0,)), pl.BlockSpec((4,), lambda i, n: (0,))])
            return pl.pallas_call(kernel, out_shape=(jax.ShapeDtypeStruct((8,), x.dtype), jax.ShapeDtypeStruct((4,), x.dtype)),
                                  grid_spec=spec, interpret=interpret)(n, x)
        return call

    x = jnp.arange(8, dtype=jnp.float32) - 3.0
    for n in (2, 5):
        _both(make, jnp.array([n], jnp.int32), x, exact=False)


def test_softmax_rows_with_iota_mask_and_two_outputs():
    def kernel(x_ref, o_ref, m_ref):
        x = x_ref[...]
        columns = lax.broadcasted_iota(jnp.int32, x.shape, 1)
        x = jnp.where(columns < 12, x, -jnp.inf)
        top = jnp.max(x, axis=1, keepdims=True)
        e = jnp.exp(x - top)
        o_ref[...] = e / jnp.sum(e, axis=1, keepdims=True)
        m_ref[...] = top[:, 0]

    def make(interpret):
        def call(x):
            return pl.pallas_call(kernel, out_shape=(jax.ShapeDtypeStruct(x.shape, x.dtype),
                                                     jax.ShapeDtypeStruct((x.shape[0],), x.dtype)),
                                  grid=(x.shape[0] // 4,), in_specs=[pl.BlockSpec((4, 16), lambda i: (i, 0))],
                                  out_specs=[pl.BlockSpec((4, 16), lambda i: (i, 0)), pl.BlockSpec((4,), lambda i: (i,))],
                                  interpret=interpret)(x)
        return call

    _both(make, jnp.asarray(np.random.default_rng(6).standard_normal((8, 16)), jnp.float32), exact=False)


def test_atomic_add_accumulates_in_grid_order():
    from jax.experimental.pallas import triton as plgpu

    def kernel(x_ref, o_ref):
        @pl.when(pl.program_id(0) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)

        plgpu.atomic_add(o_ref, pl.ds(0, 4), x_ref[...])

    def make(interpret):
        def call(x):
            return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((4,), x.dtype), grid=(3,),
                                  in_specs=[pl.BlockSpec((4,), lambda i: (i,))],
                                  out_specs=pl.BlockSpec((4,), lambda i: (0,)), interpret=interpret)(x)
        return call

    _both(make, jnp.arange(12, dtype=jnp.float32))


def test_custom_vjp_pair_of_pallas_kernels_trains():
    """A layer y = x * w whose forward and backward are Pallas kernels (custom_vjp): insitu's
    gradient equals jnp's, and gradient descent through it fits w."""
    def scale_kernel(a_ref, b_ref, o_ref):
        o_ref[...] = a_ref[...] * b_ref[...]

    def scale(a, b):
        return pl.pallas_call(scale_kernel, out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype))(a, b)

    @jax.custom_vjp
    def layer(x, w):
        return scale(x, w)

    def forward(x, w):
        return scale(x, w), (x, w)

    def backward(saved, g):
        x, w = saved
        return scale(g, w), scale(g, x)

    layer.defvjp(forward, backward)

    def loss(w, x, y):
        return jnp.mean((layer(x, w) - y) ** 2)

    def plain_loss(w, x, y):
        return jnp.mean((x * w - y) ** 2)

    grad = insitu.jax.jit(jax.grad(loss))
    x = jnp.asarray(np.random.default_rng(7).standard_normal((8, 4)), jnp.float32)
    y = x * 3.0
    w = jnp.ones((8, 4), jnp.float32)
    np.testing.assert_allclose(np.asarray(grad(w, x, y)), np.asarray(jax.grad(plain_loss)(w, x, y)), rtol=1e-6)
    first = float(plain_loss(w, x, y))
    for _ in range(200):
        w = w - 2.0 * grad(w, x, y)
    assert float(plain_loss(w, x, y)) < first * 1e-2


@pytest.mark.parametrize("seed", range(60))
def test_generated_kernels_match_interpret_mode(seed):
    """Random kernels from pallas_generator.py: grids of rank 1-3, Blocked and squeezed blocks,
    ragged grids, identity/reversed/transposed/constant/offset/scalar-prefetch index maps,
    elementwise, reduction and dot bodies written directly, in loops, in slices, through scratch
    or accumulated over a reduction axis under pl.when, 1-2 outputs, aliasing with and without
    donation, f32/int32/bf16 (`python python/tests/pallas_generator.py --describe SEED` prints
    one; `--seeds 0:10000` runs a sweep)."""
    status, text = pallas_generator.run_case(seed)
    assert status == "ok", f"{status}: {pallas_generator.generate(seed).describe()}\n{text}"


def test_interpret_true_inside_insitu_jit_keeps_jax_meaning(monkeypatch):
    """interpret=True is JAX's own lowering (its interpreter loop), which insitu then runs; insitu's
    grid loop is never built for it."""
    import insitu.pallas

    def refuse(*args, **kwargs):
        raise AssertionError("insitu's grid loop was built for an interpret=True kernel")

    monkeypatch.setattr(insitu.pallas, "_grid_loop", refuse)
    x = jnp.arange(8 * 128, dtype=jnp.float32).reshape(8, 128)
    out = insitu.jax.jit(seed_call(True))(x)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(x) + 1)


def test_program_id_inside_a_when_branch_and_a_loop_body_reads_the_grid_step():
    """JAX's interpret mode cannot run this (no lowering of program_id off its device inside a
    nested body); insitu traces the nested bodies again inside the grid step. Checked by hand."""
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]

        @pl.when(pl.program_id(0) == 1)
        def _():
            o_ref[...] = x_ref[...] * pl.program_id(0).astype(jnp.float32) * 3

        def body(j, acc):
            return acc + pl.program_id(0).astype(jnp.float32) + jnp.float32(pl.num_programs(0))

        o_ref[...] += lax.fori_loop(0, 2, body, jnp.zeros((4,), jnp.float32))

    def call(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8,), jnp.float32), grid=(2,),
                              in_specs=[pl.BlockSpec((4,), lambda i: (i,))],
                              out_specs=pl.BlockSpec((4,), lambda i: (i,)))(x)

    x = jnp.arange(8, dtype=jnp.float32)
    expected = np.concatenate([np.arange(4) + 2 * (0 + 2), np.arange(4, 8) * 3 + 2 * (1 + 2)])
    np.testing.assert_array_equal(np.asarray(insitu.jax.jit(call)(x)), expected)


def test_an_output_every_step_writes_whole_is_made_without_a_fill():
    """Blocks that cover the output, each written whole on every path: the output starts as
    memory no one reads (insitu_unread_memory, no fill pass); a block written only under pl.when
    keeps what interpret mode gives the rest (NaN)."""
    def whole(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0

    def some(x_ref, o_ref):
        @pl.when(pl.program_id(0) % 2 == 0)
        def _():
            o_ref[...] = x_ref[...] * 2.0

    def make(kernel):
        def build(interpret):
            def call(x):
                spec = pl.BlockSpec((4, x.shape[1]), lambda i: (i, 0))
                return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(x.shape[0] // 4,),
                                      in_specs=[spec], out_specs=spec, interpret=interpret)(x)
            return call
        return build

    x = jnp.asarray(np.random.default_rng(4).standard_normal((16, 8)), jnp.float32)
    _, executable = _both(make(whole), x)
    assert "insitu_unread_memory" in insitu.jax.jit(make(whole)(False)).lower(x).as_text(dialect="hlo")
    # the blocks and the grid's scalars, no fill
    assert x.size * 4 <= executable.stats["bytes_written"] < x.size * 4 + 64, executable.stats
    out, _ = _both(make(some), x)
    assert np.isnan(np.asarray(out)[4:8]).all()
    assert "insitu_unread_memory" not in insitu.jax.jit(make(some)(False)).lower(x).as_text(dialect="hlo")


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_tpu_style_flash_attention_with_scratch_and_dimension_semantics(causal, dtype):
    """bench/python/pallas_kernels.py's flash_attention_tpu (a flash attention written as published
    TPU kernels write it: 4-D grid, VMEM scratch for the running max, sum and output reset and
    written out under pl.when, causal key blocks skipped under pl.when, dimension_semantics with
    an arbitrary key axis) against interpret mode (and, in f32, against jnp's attention): its three
    parallel axes run on threads, each worker with its own scratch. The pl.when branches write
    the scratch and the output block over their old values (conditional-in-place), so a step
    copies at most the running max (64 floats, read again after its update): 8.3 KB a step before.
    The blocks the step reads are views inside its branch (24.6 KB a step copied out before)."""
    rng = np.random.default_rng(3)
    q, k, v = (jnp.asarray(rng.standard_normal((2, 3, 128, 32)), dtype) for _ in range(3))
    tolerance = 1e-5 if dtype == jnp.float32 else 1e-2
    make = lambda interpret: pallas_kernels.flash_attention_tpu(interpret, causal, block_q=64, block_k=32)  # noqa: E731
    out, executable = _both(make, q, k, v, exact=False, tolerance=tolerance)
    (kernel,) = executable.stats["pallas_kernels"]
    if dtype == jnp.float32:
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(32)
        if causal:
            s = jnp.where(jnp.tril(jnp.ones((128, 128), bool)), s, -1e30)
        np.testing.assert_allclose(np.asarray(out), np.asarray(jax.nn.softmax(s, axis=-1) @ v), rtol=2e-5, atol=2e-5)
    assert kernel["parallel_axes"] == [0, 1, 2] or kernel["in_order_because"] == "it ran on one thread", kernel
    assert kernel["bytes_copied"] <= 64 * 4 * kernel["steps"], kernel
    # the q, k and v blocks are read where they lie inside the step's branch; the output block
    # is read and written back inside the finishing branch (slice-update-folding's form 3):
    # 393,216 bytes staged a call before, the old output block moved out and back every step
    assert kernel["bytes_staged"] == 0, kernel
