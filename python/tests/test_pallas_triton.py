"""Triton-style Pallas kernels on threads: no BlockSpec, every ref its whole array, each grid
step its own slice through pl.ds (python/insitu/pallas_footprints.py proves the slices
disjoint), masked loads and stores over their window (pallas_discharge.py), outputs the steps set
everywhere not filled first, and the runtime's refusal of a step that rewrites a whole shared
array. Each kernel is checked against JAX's interpret mode (test_pallas_parallel._run)."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.experimental import pallas as pl  # noqa: E402

import insitu.jax  # noqa: E402
from test_pallas_parallel import _run  # noqa: E402  (beside this file)

N = 4096
BLOCK = 256
V = jnp.asarray(np.random.default_rng(2).standard_normal(N), jnp.float32)


def _whole_refs(kernel, outputs=1, grid=N // BLOCK, aliases=None):
    """A pallas_call with no BlockSpec (every ref its whole array) over `grid` steps."""
    def make(interpret):
        def call(*xs):
            shape = jax.ShapeDtypeStruct(xs[0].shape, xs[0].dtype)
            return pl.pallas_call(kernel, out_shape=shape if outputs == 1 else [shape] * outputs, grid=(grid,),
                                  input_output_aliases=aliases or {}, interpret=interpret)(*xs)
        return call
    return make


def test_whole_array_refs_sliced_by_program_id_run_on_threads():
    def kernel(x_ref, y_ref, o_ref):
        at = pl.ds(pl.program_id(0) * BLOCK, BLOCK)
        o_ref[at] = x_ref[at] * 2.0 + y_ref[at]

    kernel_stats, explained = _run(_whole_refs(kernel), V, V + 1.0)
    assert kernel_stats["parallel_axes"] == [0] and kernel_stats["bytes_copied"] == 0, kernel_stats
    assert "grid axis 0 on threads" in explained, explained


def _masked_exp(n):
    from jax.experimental.pallas import triton as plgpu

    def kernel(x_ref, o_ref):
        first = pl.program_id(0) * BLOCK
        mask = first + jnp.arange(BLOCK) < n
        x = plgpu.load(x_ref.at[pl.ds(first, BLOCK)], mask=mask, other=0.0)
        plgpu.store(o_ref.at[pl.ds(first, BLOCK)], jnp.exp(x), mask=mask)
    return kernel


def test_masked_triton_loads_and_stores_touch_their_window_in_place_on_threads():
    """A masked store is discharged as an update of its window (pallas_discharge.py), not as JAX's
    pad / update / pad back of the whole array: in place, and the steps run on threads."""
    kernel_stats, _ = _run(_whole_refs(_masked_exp(N), grid=16), V, exact=False)
    assert kernel_stats["parallel_axes"] == [0] and kernel_stats["bytes_copied"] == 0, kernel_stats
    fn = insitu.jax.jit(_whole_refs(_masked_exp(N), grid=16)(False))
    jax.block_until_ready(fn(V))
    # JAX's rule rewrote the whole 16 KB array twice a step (16 steps: 512 KB and more); every
    # slice here lies inside the array, so each is read and written where it lies: the output
    # once (its masks cover it: no fill), nothing staged
    stats = fn.executable(V).stats
    assert stats["bytes_written"] < N * 4 + 1024 and stats["bytes_staged"] == 0, stats


def test_a_masked_slice_past_the_end_writes_only_its_lanes_on_threads():
    """4,000 elements in 16 steps of 256: the last step's slice runs past the end. Its store
    writes its in-bounds lanes only (a scatter of single elements: pallas_discharge.py), not its
    window moved back over its neighbour's slice, so the steps stay disjoint and run on threads;
    its load reads the window and shifts it. Only the last step takes that general body (a cond
    per step picks it), so only its window is staged."""
    n = 4000
    kernel_stats, _ = _run(_whole_refs(_masked_exp(n), grid=16), V[:n], exact=False)
    assert kernel_stats["parallel_axes"] == [0], kernel_stats
    assert 0 < kernel_stats["bytes_staged"] <= 2 * BLOCK * 4, kernel_stats
    # the masks' in-bounds lanes cover the output: it is not filled with NaN first
    fn = insitu.jax.jit(_whole_refs(_masked_exp(n), grid=16)(False))
    jax.block_until_ready(fn(V[:n]))
    assert fn.executable(V[:n]).stats["bytes_written"] < 2 * n * 4, fn.executable(V[:n]).stats  # a fill: 39 KB


def test_an_in_place_masked_kernel_reading_past_its_slice_runs_in_order():
    """x aliased to the output, each step reading its slice moved back at the ragged end: the
    last step's window read overlaps its neighbour's write, so the steps stay in order."""
    from jax.experimental.pallas import triton as plgpu

    n = 4000

    def kernel(x_ref, o_ref):
        first = pl.program_id(0) * BLOCK
        mask = first + jnp.arange(BLOCK) < n
        x = plgpu.load(x_ref.at[pl.ds(first, BLOCK)], mask=mask, other=0.0)
        plgpu.store(o_ref.at[pl.ds(first, BLOCK)], x * 2.0, mask=mask)

    kernel_stats, _ = _run(_whole_refs(kernel, grid=16, aliases={0: 0}), V[:n])
    assert kernel_stats["parallel_axes"] == [], kernel_stats


@pytest.mark.parametrize("start", [0, 5, 12, 13, 16, 19, 40, -1, -3, -8, -20, -27, -40])
def test_masked_windows_give_interpret_modes_values_at_any_start(start):
    """Masked loads and stores of 2-D slices with an integer index, at starts in bounds, past the
    end (the window moved back, the slice shifted inside it, past-the-end lanes reading JAX's
    uninitialized value) and before the start: exactly interpret mode's values, the swap's old
    values included."""
    from jax.experimental.pallas import triton as plgpu

    def kernel(x_ref, o_in_ref, o_ref, old_ref):
        at = pl.program_id(0) + start  # a traced start: JAX refuses a static one out of bounds
        rows = at + jnp.arange(8)
        mask = (rows < 20)[:, None] & (jnp.arange(4) < 3)[None, :]
        x = plgpu.load(x_ref.at[pl.ds(at, 8), pl.ds(2, 4)], mask=mask, other=-7.0)
        old_ref[...] = plgpu.load(o_ref.at[pl.ds(at, 8), pl.ds(2, 4)])
        plgpu.store(o_ref.at[pl.ds(at, 8), pl.ds(2, 4)], x * 2.0 + 1.0, mask=mask)
        o_ref[3, pl.ds(0, 2)] = x[0, :2]
        row = plgpu.load(x_ref.at[at + 1, pl.ds(1, 6)])
        plgpu.store(o_ref.at[at + 2, pl.ds(0, 6)], row)

    def make(interpret):
        def call(x, o):
            return pl.pallas_call(kernel, out_shape=[jax.ShapeDtypeStruct(o.shape, o.dtype),
                                                     jax.ShapeDtypeStruct((8, 4), o.dtype)],
                                  grid=(1,), input_output_aliases={1: 0}, interpret=interpret)(x, o)
        return call

    x = jnp.asarray(np.arange(20 * 8).reshape(20, 8), jnp.float32)
    o = jnp.asarray(-np.arange(20 * 8).reshape(20, 8), jnp.float32)
    _run(make, x, o)


def test_whole_array_slices_clamped_into_overlap_run_in_order():
    """x_ref[pl.ds(i * 256, 512)]: dynamic_slice moves the last step's slice back to [3584, 4096),
    which the step before writes too; and a step writing its neighbour's slice: both in order."""
    def reading_ahead(x_ref, o_ref):
        i = pl.program_id(0)
        o_ref[pl.ds(i * BLOCK, 2 * BLOCK)] = x_ref[pl.ds(i * BLOCK, 2 * BLOCK)] + 1.0

    kernel_stats, _ = _run(_whole_refs(reading_ahead, grid=N // BLOCK), V)
    assert kernel_stats["parallel_axes"] == [] and "touch one element" in kernel_stats["in_order_because"], kernel_stats

    def neighbour(x_ref, o_ref):
        i = pl.program_id(0)
        o_ref[pl.ds(i * BLOCK, BLOCK)] = x_ref[pl.ds(i * BLOCK, BLOCK)]
        o_ref[pl.ds(((i + 1) % (N // BLOCK)) * BLOCK, 1)] = jnp.zeros((1,), jnp.float32)

    kernel_stats, _ = _run(_whole_refs(neighbour), V)
    assert kernel_stats["parallel_axes"] == [], kernel_stats


def test_a_start_read_from_data_or_a_loop_counts_the_whole_dimension():
    """A start loaded from an input, or a fori_loop's counter, is not followed: the slice counts
    as the whole dimension. Along rows the 2-D kernel's steps stay disjoint (row i by program
    id), so it still runs on threads; the 1-D one, whose start comes from data, does not."""
    def from_data(x_ref, where_ref, o_ref):
        start = where_ref[pl.program_id(0)]
        o_ref[pl.ds(start, BLOCK)] = x_ref[pl.ds(start, BLOCK)] * 3.0

    where = jnp.arange(N // BLOCK, dtype=jnp.int32) * BLOCK
    kernel_stats, _ = _run(_whole_refs(from_data), V, where)
    assert kernel_stats["parallel_axes"] == [], kernel_stats

    def rows_by_columns(x_ref, o_ref):
        row = pl.program_id(0)

        def chunk(j, carry):
            at = (pl.ds(row, 1), pl.ds(j * 16, 16))
            o_ref[at] = x_ref[at] + 1.0
            return carry

        lax.fori_loop(0, 4, chunk, 0)

    x = jnp.asarray(np.arange(32 * 64).reshape(32, 64), jnp.float32)
    kernel_stats, _ = _run(_whole_refs(rows_by_columns, grid=32), x)
    assert kernel_stats["parallel_axes"] == [0], kernel_stats


def test_a_write_under_pl_when_counts_at_every_step():
    def kernel(x_ref, o_ref):
        i = pl.program_id(0)
        o_ref[pl.ds(i * BLOCK, BLOCK)] = x_ref[pl.ds(i * BLOCK, BLOCK)]

        @pl.when(i == 0)
        def _():
            o_ref[3] = -1.0

    kernel_stats, _ = _run(_whole_refs(kernel), V)
    assert kernel_stats["parallel_axes"] == [], kernel_stats


def test_an_atomic_add_counts_its_whole_ref():
    from jax.experimental.pallas import triton as plgpu

    def kernel(x_ref, acc_ref, o_ref):
        i = pl.program_id(0)
        plgpu.atomic_add(o_ref, pl.ds(i * BLOCK, BLOCK), x_ref[pl.ds(i * BLOCK, BLOCK)])

    kernel_stats, _ = _run(_whole_refs(kernel, aliases={1: 0}), V, jnp.zeros(N, jnp.float32))
    assert kernel_stats["parallel_axes"] == [], kernel_stats


def test_donated_whole_array_updated_in_place_on_threads():
    def kernel(x_ref, o_ref):
        at = pl.ds(pl.program_id(0) * BLOCK, BLOCK)
        o_ref[at] = x_ref[at] + 1.0

    kernel_stats, _ = _run(_whole_refs(kernel, aliases={0: 0}), V, donate=(0,))
    assert kernel_stats["parallel_axes"] == [0] and kernel_stats["bytes_copied"] == 0, kernel_stats


def test_a_whole_array_output_every_step_sets_a_slice_of_is_not_filled_first():
    """The steps' unmasked stores together set every element and nothing reads the output: insitu
    writes only what the stores write (no fill with interpret mode's NaN first); one that sets
    half of it, or reads what it set, keeps the fill (the NaN shows where nothing was set)."""
    def sets_all(x_ref, o_ref):
        at = pl.ds(pl.program_id(0) * BLOCK, BLOCK)
        o_ref[at] = x_ref[at] * 2.0

    fn = insitu.jax.jit(_whole_refs(sets_all)(False))
    jax.block_until_ready(fn(V))
    stats = fn.executable(V).stats
    assert stats["bytes_written"] < N * 4 + 1024, stats  # the output once, not a fill and then the output

    def sets_half(x_ref, o_ref):
        at = pl.ds(pl.program_id(0) * BLOCK // 2, BLOCK // 2)
        o_ref[at] = x_ref[at] * 2.0

    kernel_stats, _ = _run(_whole_refs(sets_half), V)  # exact: NaN where nothing was set, as interpret
    assert kernel_stats["parallel_axes"] == [0], kernel_stats
    assert np.isnan(np.asarray(insitu.jax.jit(_whole_refs(sets_half)(False))(V))[N // 2:]).all()

    def reads_back(x_ref, o_ref):
        at = pl.ds(pl.program_id(0) * BLOCK, BLOCK)
        o_ref[at] = x_ref[at]
        o_ref[at] = o_ref[at] + 1.0

    _run(_whole_refs(reads_back), V)
    fn = insitu.jax.jit(_whole_refs(reads_back)(False))
    jax.block_until_ready(fn(V))
    assert fn.executable(V).stats["bytes_written"] >= 2 * N * 4, fn.executable(V).stats  # filled first


def test_random_masked_windows_give_interpret_modes_values():
    """Twenty random masked loads and stores (1-D and 2-D refs, slice sizes up to the dimension,
    starts before, inside and past the end, random masks, with and without `other`), each
    against interpret mode bit for bit: the window discharge (pallas_discharge.py) is JAX's
    padded one in values."""
    from jax.experimental.pallas import triton as plgpu

    rng = np.random.default_rng(11)
    for case in range(20):
        rank = int(rng.integers(1, 3))
        shape = tuple(int(d) for d in rng.integers(3, 12, size=rank))
        sizes = tuple(int(rng.integers(1, d + 1)) for d in shape)
        starts = tuple(int(rng.integers(-d - 4, d + 4)) for d in shape)
        mask = jnp.asarray(rng.random(sizes) < 0.7)
        other = None if case % 3 == 0 else -5.0

        def kernel(x_ref, m_ref, o_in_ref, o_ref, loaded_ref):
            at = tuple(pl.ds(pl.program_id(0) + s, n) for s, n in zip(starts, sizes))
            value = plgpu.load(x_ref.at[at], mask=m_ref[...], other=other)
            loaded_ref[...] = jnp.where(m_ref[...], value, 0.0)
            plgpu.store(o_ref.at[at], value * 2.0, mask=m_ref[...])  # exact: no contraction to differ

        def make(interpret):
            def call(x, m, o):
                return pl.pallas_call(kernel, out_shape=[jax.ShapeDtypeStruct(o.shape, o.dtype),
                                                         jax.ShapeDtypeStruct(sizes, o.dtype)],
                                      grid=(1,), input_output_aliases={2: 0}, interpret=interpret)(x, m, o)
            return call

        x = jnp.asarray(rng.standard_normal(shape), jnp.float32)
        o = jnp.asarray(rng.standard_normal(shape), jnp.float32)
        try:
            _run(make, x, mask, o)
        except AssertionError as error:
            raise AssertionError(f"case {case}: shape {shape}, sizes {sizes}, starts {starts}") from error


def test_a_store_at_a_start_the_proof_cannot_follow_does_not_count_as_setting_its_output():
    """Step 0 stores at pl.ds(-1, B): lax.dynamic_update_slice wraps the start to the end of the
    array, so the first B - 1 elements are never written (interpret mode's NaN). The proof widens
    such a box to the whole dimension, which is sound for independence but not for "sets every
    element": the output must still be filled first (it came back as uninitialized memory, seed 26
    of triton_generator.py)."""
    def kernel(x_ref, o_ref):
        at = pl.program_id(0) * 32
        o_ref[pl.ds(at - 1, 32)] = x_ref[pl.ds(at, 32)] * 2.0

    x = V[:116]
    _run(_whole_refs(kernel, grid=4), x)  # exact: NaN where interpret mode leaves NaN


def test_random_triton_kernels_match_interpret_mode_on_threads():
    """triton_generator.py's kernels (seeds 0-39): whole-array refs sliced by program id, masked
    or not, neighbours' slices, pl.when, loops, aliases; each three times on two threads."""
    import triton_generator  # beside this file

    failures = []
    for seed in range(40):
        status, text = triton_generator.run_case(seed)
        if status != "ok":
            failures.append(f"{triton_generator.Case(seed).describe()} || {status}: {text}")
    assert not failures, "\n".join(failures)


def test_masked_stores_whose_masks_cover_the_output_do_not_fill_it_first():
    """The masks (`offsets < n`, evaluated over the grid by the proof) cover every element: no
    fill. A mask that leaves holes keeps the fill: interpret mode's NaN shows there."""
    from jax.experimental.pallas import triton as plgpu

    def covering(x_ref, o_ref):
        first = pl.program_id(0) * BLOCK
        mask = first + jnp.arange(BLOCK) < N
        plgpu.store(o_ref.at[pl.ds(first, BLOCK)], x_ref[pl.ds(first, BLOCK)] + 1.0, mask=mask)

    _run(_whole_refs(covering), V)

    def holes(x_ref, o_ref):
        first = pl.program_id(0) * BLOCK
        mask = jnp.arange(BLOCK) % 2 == 0
        plgpu.store(o_ref.at[pl.ds(first, BLOCK)], x_ref[pl.ds(first, BLOCK)] + 1.0, mask=mask)

    _run(_whole_refs(holes), V)  # exact: NaN at the odd elements, as interpret mode
    assert np.isnan(np.asarray(insitu.jax.jit(_whole_refs(holes)(False))(V))[1::2]).all()

    def written(kernel):
        fn = insitu.jax.jit(_whole_refs(kernel)(False))
        jax.block_until_ready(fn(V))
        return fn.executable(V).stats["bytes_written"]

    # the same steps; the kernel with holes also fills the output (N f32) first
    assert written(holes) - written(covering) >= N * 4 - 256, (written(holes), written(covering))


def test_the_masked_rules_are_insitus_only_while_it_lowers():
    """After insitu lowered a masked kernel, JAX's discharge rules are JAX's own again (a plain
    jax.jit keeps JAX's meaning, here the same values by a different route)."""
    from jax._src.pallas import primitives
    from jax._src.state import discharge

    kernel_stats, _ = _run(_whole_refs(_masked_exp(N), grid=16), V, exact=False)
    for primitive in (primitives.load_p, primitives.swap_p):
        assert discharge._discharge_rules[primitive].__module__ == "jax._src.pallas.primitives"


def test_masks_true_at_every_lane_of_every_step_are_dropped():
    """`offsets < n` over a grid that tiles n is true everywhere (the proof evaluates it): the
    masked kernel compiles to the unmasked one (the same bytes written: no select reading the
    old output, no mask computed), with the same values."""
    from jax.experimental.pallas import triton as plgpu

    def masked(x_ref, o_ref):
        first = pl.program_id(0) * BLOCK
        mask = first + jnp.arange(BLOCK) < N
        x = plgpu.load(x_ref.at[pl.ds(first, BLOCK)], mask=mask, other=0.0)
        plgpu.store(o_ref.at[pl.ds(first, BLOCK)], x * 2.0, mask=mask)

    def plain(x_ref, o_ref):
        at = pl.ds(pl.program_id(0) * BLOCK, BLOCK)
        o_ref[at] = x_ref[at] * 2.0

    def written(kernel):
        fn = insitu.jax.jit(_whole_refs(kernel)(False))
        jax.block_until_ready(fn(V))
        return fn.executable(V).stats["bytes_written"]

    _run(_whole_refs(masked), V)
    assert written(masked) == written(plain), (written(masked), written(plain))
