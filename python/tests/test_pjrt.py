"""insitu as a JAX device (issue 38): the PJRT plugin under plain jax.jit, on
jax.devices("insitu")[0]. conftest.py registers it (insitu.jax_plugin.initialize(), what the
jax_plugins entry point does after `pip install .`) before JAX makes its backends."""
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import insitu.jax_plugin  # noqa: E402
from conftest import REPO, assert_corpus_leaves_match  # noqa: E402

sys.path.insert(0, str(REPO / "bench" / "peers"))
import jax_programs  # noqa: E402


@pytest.fixture(scope="module")
def device():
    assert insitu.jax_plugin.available(), "this build of insitu has no PJRT plugin (no pjrt_c_api.h when it was built)"
    devices = jax.devices("insitu")
    assert len(devices) == 1 and devices[0].platform == "insitu"
    assert jax.default_backend() == "cpu"  # chosen, not imposed
    return devices[0]


def _put(tree, device):
    return jax.tree_util.tree_map(lambda leaf: jax.device_put(np.asarray(leaf), device), tree)


@pytest.mark.parametrize("name", sorted(jax_programs.PROGRAMS))
def test_corpus_program_under_jax_jit(name, device):
    _, builder = jax_programs.PROGRAMS[name]
    function, args, options = builder()
    args = jax.tree_util.tree_map(np.asarray, args)
    cpu = jax.devices("cpu")[0]
    expected = jax.jit(function, **options)(*_put(args, cpu))
    # arrays the device computed (jnp.array copies): numpy memory device_put lends is never written
    on_device = jax.tree_util.tree_map(lambda leaf: jnp.array(leaf, copy=True), _put(args, device))
    donated = [leaf for i in _indices(options.get("donate_argnums", ()))
               for leaf in jax.tree_util.tree_leaves(on_device[i]) if leaf.size]
    pointers = [leaf.unsafe_buffer_pointer() for leaf in donated]
    aliased = "tf.aliasing_output" in jax.jit(function, **options).lower(*on_device).as_text()
    got = jax.jit(function, **options)(*on_device)
    for leaf in jax.tree_util.tree_leaves(got):
        assert leaf.devices() == {device}
    assert_corpus_leaves_match(name, jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(expected))
    # a donated argument JAX aliased is consumed, and its memory is an output's
    outputs = {leaf.unsafe_buffer_pointer() for leaf in jax.tree_util.tree_leaves(got) if leaf.size}
    consumed = [pointer for leaf, pointer in zip(donated, pointers) if leaf.is_deleted()]
    assert set(consumed) <= outputs
    assert bool(consumed) == aliased


def _indices(donate_argnums):
    return (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)


def test_donated_argument_is_updated_in_its_own_buffer_and_deleted(device):
    step = jax.jit(lambda cache, row, pos: jax.lax.dynamic_update_slice(cache, row[None], (pos, 0)),
                   donate_argnums=0)
    cache = jax.device_put(np.zeros((1024, 64), np.float32), device)
    cache = cache + 0  # an array insitu computed (device_put may lend numpy's memory, which is never written)
    pointer = cache.unsafe_buffer_pointer()
    out = step(cache, jax.device_put(np.ones(64, np.float32), device), 5)
    assert out.unsafe_buffer_pointer() == pointer
    assert cache.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(cache)
    host = np.asarray(out)
    assert host[5].tolist() == [1.0] * 64 and host.sum() == 64


def test_numpy_memory_lent_to_the_device_is_never_written(device):
    values = np.arange(8, dtype=np.float32)
    x = jax.device_put(values, device)
    y = jax.jit(lambda a: a * 2, donate_argnums=0)(x)
    assert x.is_deleted()
    np.testing.assert_array_equal(values, np.arange(8, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(y), np.arange(8, dtype=np.float32) * 2)


def test_a_numpy_view_keeps_its_values_when_the_array_is_donated(device):
    x = jax.device_put(np.ones(16, np.float32), device) + 1
    view = np.asarray(x)  # zero-copy: the host reads insitu's memory
    y = jax.jit(lambda a: a + 1, donate_argnums=0)(x)
    np.testing.assert_array_equal(view, np.full(16, 2, np.float32))
    np.testing.assert_array_equal(np.asarray(y), np.full(16, 3, np.float32))


def test_seed_pallas_kernel_runs_in_place_as_written(device):
    """The seed's script (examples/seed): a Pallas kernel aliased and donated, run by jax.jit."""
    from jax.experimental import pallas as pl

    def plus_one_kernel(x_ref, o_ref):
        o_ref[:] = o_ref[:] + 1

    @jax.jit
    def plus_one(x):
        return pl.pallas_call(plus_one_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              input_output_aliases={0: 0})(x)

    donating = jax.jit(plus_one, donate_argnums=[0])
    x = jax.device_put(np.arange(8, dtype=np.float32).reshape(2, 4), device) * 1
    pointer = x.unsafe_buffer_pointer()
    y = donating(x)
    np.testing.assert_array_equal(np.asarray(y), np.arange(8, dtype=np.float32).reshape(2, 4) + 1)
    assert x.is_deleted() and y.unsafe_buffer_pointer() == pointer


def test_jax_transformations_and_random_on_the_device(device):
    with jax.default_device(device):
        w = jnp.arange(6.0).reshape(2, 3) / 10
        x = jnp.ones((4, 2))

        def loss(w, x):
            return jnp.sum(jnp.tanh(x @ w) ** 2)

        grad = jax.jit(jax.grad(loss))(w, x)
        batched = jax.jit(jax.vmap(lambda row: row @ w))(x)
        key = jax.random.key(0)
        sample = jax.jit(lambda k: jax.random.normal(k, (5,)))(key)
        scaled = jax.jit(lambda v, n: v * n, static_argnums=1)(w, 3)
    cpu = jax.devices("cpu")[0]
    with jax.default_device(cpu):
        w_cpu, x_cpu = jax.device_put(np.asarray(w), cpu), jax.device_put(np.asarray(x), cpu)
        np.testing.assert_allclose(np.asarray(grad), np.asarray(jax.grad(loss)(w_cpu, x_cpu)), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(batched), np.asarray(x_cpu @ w_cpu), rtol=1e-6)
        np.testing.assert_array_equal(np.asarray(sample), np.asarray(jax.random.normal(jax.random.key(0), (5,))))
    assert grad.devices() == {device}
    np.testing.assert_allclose(np.asarray(scaled), np.asarray(w) * 3)
    tree = jax.device_get({"a": batched, "b": [scaled]})
    assert isinstance(tree["a"], np.ndarray)
    scaled.block_until_ready()
    scaled.delete()
    assert scaled.is_deleted()


def test_linalg_runs_through_the_cpu_rules_lent_to_insitu(device):
    a = np.array([[4.0, 1.0], [1.0, 3.0]], np.float32)
    values = jax.jit(lambda m: jnp.linalg.eigh(m)[0])(jax.device_put(a, device))
    np.testing.assert_allclose(np.asarray(values), np.linalg.eigvalsh(a), rtol=1e-5)


def test_a_program_insitu_cannot_run_is_an_exception_with_its_message(device):
    def sample(x):
        return x + jax.lax.rng_uniform(0.0, 1.0, (4,))  # stablehlo.rng: insitu cannot run it

    with pytest.raises(jax.errors.JaxRuntimeError, match=r"byte \d+ \(.*test_pjrt.py:\d+\): vhlo.rng_v1 is not read"):
        jax.jit(sample)(jax.device_put(np.ones(4, np.float32), device))
    x = jax.device_put(np.ones(4, np.float32), device) * 1
    with pytest.raises(jax.errors.JaxRuntimeError, match="rng_v1"):
        jax.jit(sample, donate_argnums=0)(x)
    assert not x.is_deleted()  # a program that does not compile consumes nothing


def test_compiled_program_reports_insitus_costs_and_memory(device):
    compiled = jax.jit(lambda c, r: c.at[3].set(r), donate_argnums=0).lower(
        jax.device_put(np.zeros((256, 64), np.float32), device),
        jax.device_put(np.ones(64, np.float32), device)).compile()
    costs = compiled.cost_analysis()
    assert costs["insitu_copies"] == 0 and costs["insitu_bytes_copied"] == 0
    memory = compiled.memory_analysis()
    assert memory.alias_size_in_bytes == 256 * 64 * 4
    assert "dynamic_update_slice" in compiled.as_text() or "scatter" in compiled.as_text()


def test_report_says_what_insitu_made_of_the_program(device):
    update = jax.jit(lambda cache, row, pos: jax.lax.dynamic_update_slice(cache, row[None], (pos, 0)),
                     donate_argnums=0)
    cache = jax.device_put(np.zeros((512, 64), np.float32), device) * 1
    row = jax.device_put(np.ones(64, np.float32), device)
    compiled = update.lower(cache, row, 3).compile()
    cache = update(cache, row, 3)
    report = insitu.jax_plugin.report(compiled)
    assert "dynamic-update-slice" in report["optimized_hlo"]
    assert report["explain_json"]["copies"] == []
    # the row (and a scalar of index arithmetic), not the 128 KiB cache
    assert report["stats"]["bytes_copied"] == 0 and 64 * 4 <= report["stats"]["bytes_written"] < 64 * 4 + 64
    with pytest.raises(ValueError, match="insitu device"):
        insitu.jax_plugin.report(jax.jit(lambda a: a).lower(np.ones(2)).compile())


def test_persistent_compilation_cache_serves_the_device(device, tmp_path):
    from jax._src import compilation_cache, monitoring

    events = []
    listener = lambda name, **_: events.append(name)  # noqa: E731
    monitoring.register_event_listener(listener)
    settings = {"jax_compilation_cache_dir": str(tmp_path), "jax_persistent_cache_min_compile_time_secs": 0,
                "jax_persistent_cache_min_entry_size_bytes": 0}
    saved = {name: getattr(jax.config, name) for name in settings}
    try:
        for name, value in settings.items():
            jax.config.update(name, value)
        compilation_cache.reset_cache()
        x = jax.device_put(np.arange(4, dtype=np.float32), device)
        first = np.asarray(jax.jit(lambda a: a * 3 + 1)(x))
        assert len(list(tmp_path.iterdir())) == 1 and "/jax/compilation_cache/cache_misses" in events
        jax.clear_caches()
        again = jax.jit(lambda a: a * 3 + 1)(x)  # loaded from the cache: the plugin deserializes it
        assert "/jax/compilation_cache/cache_hits" in events
        np.testing.assert_array_equal(np.asarray(again), first)
        assert again.devices() == {device}
    finally:
        monitoring.unregister_event_listener(listener)
        for name, value in saved.items():
            jax.config.update(name, value)
        compilation_cache.reset_cache()
