"""insitu.jax.jit: jax.jit's interface with insitu running the program; and every program of
the JAX corpus (bench/peers/jax_programs.py) through it, with JAX's own results."""
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import insitu  # noqa: E402
import insitu.jax  # noqa: E402

from conftest import REPO, assert_corpus_leaves_match  # noqa: E402

sys.path.insert(0, str(REPO / "bench" / "peers"))
import jax_programs  # noqa: E402


def test_pytrees_in_and_out_and_the_cache():
    def f(params, x):
        return {"y": jnp.tanh(x @ params["w"] + params["b"]), "n": (x.sum(), x.shape[0])}

    g = insitu.jax.jit(f)
    params = {"w": jnp.ones((3, 2)), "b": jnp.arange(2.0)}
    x = jnp.arange(6.0).reshape(2, 3)
    out = g(params, x)
    ref = jax.jit(f)(params, x)
    assert jax.tree_util.tree_structure(out) == jax.tree_util.tree_structure(ref)
    np.testing.assert_allclose(out["y"], ref["y"], rtol=1e-6)
    assert isinstance(out["y"], jax.Array) and float(out["n"][0]) == 15.0
    assert g.executable(params, x) is g.executable(params, x)  # built once per signature
    assert g.executable(params, x[:1]) is not g.executable(params, x)


def test_scan_with_the_caches_as_xs_and_ys_updates_them_in_place():
    """A decode step whose layers are lax.scan with the per-layer caches in xs and the updated
    caches as ys (issue 36: the whole cache was copied each step, since the loop still read it
    while the donated buffer took the stack's value)."""
    layers, length, width = 4, 16, 8

    def step(x, weights, caches, pos):
        def layer(x, per_layer):
            w, cache = per_layer
            new = cache.at[pos].set(jnp.tanh(x @ w))
            return x + new.sum(0) * 0.01, new
        return jax.lax.scan(layer, x, (weights, caches))

    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal(width), jnp.float32)
    weights = jnp.asarray(rng.standard_normal((layers, width, width)), jnp.float32)
    caches = jnp.asarray(rng.standard_normal((layers, length, width)), jnp.float32)
    expected = jax.jit(step)(x, weights, caches, 5)
    fn = insitu.jax.jit(step, donate_argnums=2)
    out = fn(x, weights, jnp.array(caches), 5)
    for a, e in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(expected)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=1e-5, atol=1e-6)
    executable = fn.executable(x, weights, out[1], 5)
    assert executable.stats["bytes_copied"] == 0, executable.explain()
    assert executable.explain().startswith("module jit_step: 0 copies")


def test_static_arguments_key_the_cache():
    g = insitu.jax.jit(lambda x, n: x * n, static_argnums=(1,))
    x = jnp.arange(3.0)
    np.testing.assert_array_equal(g(x, 2), [0, 2, 4])
    np.testing.assert_array_equal(g(x, 3), [0, 3, 6])


def test_donated_cache_is_updated_in_place_and_deleted():
    def step(cache, row, i):
        return cache.at[i].set(row), row.sum()

    g = insitu.jax.jit(step, donate_argnums=(0,))
    cache = jnp.zeros((16, 8))
    pointer = cache.unsafe_buffer_pointer()
    new_cache, total = g(cache, jnp.ones(8), 3)
    assert cache.is_deleted()
    assert new_cache.unsafe_buffer_pointer() == pointer
    assert g.executable(new_cache, jnp.ones(8), 3).stats["bytes_copied"] == 0
    np.testing.assert_array_equal(new_cache[3], np.ones(8))
    assert float(total) == 8.0
    with pytest.raises(insitu.Error, match="argument 0 of step was donated to an earlier call"):
        g(cache, jnp.ones(8), 3)
    assert "alias: output {0} is written into parameter 0 {}" in g.executable(new_cache, jnp.ones(8), 3).explain()


def test_calls_go_through_jax_jit_dispatch_into_xla_result_buffers():
    # This build has jaxlib's headers: a call is one XLA custom call whose handler computes every
    # result straight into XLA's buffer. A returned parameter is copied there by the module's own
    # copy (copy insertion's read-only-live-out), never again by the handler.
    g = insitu.jax.jit(lambda x, y: (x * 2.0, y))
    assert g.dispatch == "xla-ffi"
    x, y = jnp.arange(4.0), jnp.arange(3, dtype=jnp.int32)
    doubled, same = g(x, y)
    np.testing.assert_array_equal(doubled, [0, 2, 4, 6])
    np.testing.assert_array_equal(same, [0, 1, 2])
    stats = g.executable(x, y).stats
    assert stats["result_bytes_copied"] == 0 and stats["bytes_copied"] == 12
    assert [copy["reason"] for copy in stats["copies_in_module"]] == ["read-only-live-out"]
    assert stats["threads"] == insitu.default_threads and stats["run_seconds"] > 0
    assert "insitu_call" in str(jax.make_jaxpr(g)(x, y))  # one custom call inside jax.jit


@pytest.mark.parametrize("dispatch", ["xla-ffi", "dlpack"])
def test_both_dispatch_paths_donate_in_place(dispatch):
    def step(cache, row, i):
        return cache.at[i].set(row), row.sum()

    g = insitu.jax.jit(step, donate_argnums=(0,), dispatch=dispatch)
    assert g.dispatch == dispatch
    cache = jnp.zeros((16, 8))
    pointer = cache.unsafe_buffer_pointer()
    for i in range(3):
        cache, total = g(cache, jnp.full(8, float(i)), i)
    jax.block_until_ready(cache)
    assert cache.unsafe_buffer_pointer() == pointer
    np.testing.assert_array_equal(cache[:3, 0], [0, 1, 2])
    assert g.executable(cache, jnp.full(8, 1.0), 0).stats["bytes_copied"] == 0


def test_unknown_dispatch_is_refused():
    with pytest.raises(ValueError, match="dispatch must be"):
        insitu.jax.jit(lambda x: x, dispatch="grpc")


def test_numpy_and_python_scalars_are_accepted():
    g = insitu.jax.jit(lambda x, s: x * s + 1)
    np.testing.assert_allclose(g(np.arange(3, dtype=np.float32), 2.0), [1, 3, 5])


def test_ffi_call_runs_the_registered_insitu_kernel_in_place(examples_plugin):
    def f(x):
        return jax.ffi.ffi_call("plus_one", jax.ShapeDtypeStruct(x.shape, x.dtype), input_output_aliases={0: 0})(x)

    g = insitu.jax.jit(f, donate_argnums=(0,))
    x = jnp.arange(8, dtype=jnp.int32)
    pointer = x.unsafe_buffer_pointer()
    y = g(x)
    np.testing.assert_array_equal(y, np.arange(8) + 1)
    assert y.unsafe_buffer_pointer() == pointer
    assert g.executable(y).stats["bytes_copied"] == 0


@pytest.mark.parametrize("name", sorted(jax_programs.PROGRAMS))
def test_corpus_program_through_insitu_jax_jit(name):
    _, builder = jax_programs.PROGRAMS[name]
    function, args, options = builder()
    args = jax.tree_util.tree_map(np.asarray, args)
    expected = jax.jit(function, keep_unused=True, **options)(*jax.tree_util.tree_map(jnp.asarray, args))
    g = insitu.jax.jit(function, **options)
    got = g(*jax.tree_util.tree_map(jnp.asarray, args))
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(expected)
    assert_corpus_leaves_match(name, jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(expected))
    stats = g.executable(*jax.tree_util.tree_map(jnp.asarray, args)).stats
    assert stats["fallback_ops_executed"] == 0, g.executable(*args).fallback_ops


def test_device_cuda_runs_on_the_gpu_or_says_why_not():
    g = insitu.jax.jit(lambda x: x * 2.0, device="cuda")
    try:
        y = g(jnp.arange(4.0))
    except insitu.Error as error:  # no GPU here: the driver's reason, never a CPU run instead
        assert "CUDA" in str(error) or "GPU" in str(error), str(error)
        return
    np.testing.assert_array_equal(y, [0.0, 2.0, 4.0, 6.0])
