"""StableHLO in (issue 37): VHLO artifacts (MLIR bytecode, as jax.export serializes a program and
as JAX hands it to a PJRT plugin) compiled by insitu.compile, with JAX's own results: the whole
JAX corpus (bench/peers/jax_programs.py), donation kept, and errors for bad input."""
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import export  # noqa: E402

import insitu  # noqa: E402
from conftest import REPO, assert_corpus_leaves_match  # noqa: E402

sys.path.insert(0, str(REPO / "bench" / "peers"))
import jax_programs  # noqa: E402


def _artifact(function, args, **options):
    """The VHLO artifact jax.export writes for jax.jit(function) at these arguments."""
    exported = export.export(jax.jit(function, **options))(*jax.tree_util.tree_map(jnp.asarray, args))
    return exported.mlir_module_serialized


def _plugin_artifact(function, args, version, **options):
    """The VHLO artifact at `version` as XLA serializes a program for a PJRT plugin (mixed
    serialization: Shardy's ops and attributes kept), through jaxlib's own serializer."""
    from jax._src.interpreters import mlir
    from jax._src.lib import _jax

    lowered = jax.jit(function, **options).lower(*jax.tree_util.tree_map(jnp.asarray, args))
    return _jax.mlir.serialize_portable_artifact(mlir.module_to_bytecode(lowered.compiler_ir("stablehlo")), version, True)


def _text(function, args, **options):
    """The StableHLO text jax.jit(function).lower(*args).as_text() prints."""
    return jax.jit(function, **options).lower(*jax.tree_util.tree_map(jnp.asarray, args)).as_text()


@pytest.mark.parametrize("form", ["export", "1.16.3", "1.22.0", "text"])
@pytest.mark.parametrize("name", sorted(jax_programs.PROGRAMS))
def test_corpus_program_from_its_vhlo_artifact(name, form):
    """jax.export's artifact, the plugin's at both versions JAX 0.12 sends (1.22.0 when the
    plugin asks for the current one, 1.16.3 otherwise), and the StableHLO text JAX prints."""
    _, builder = jax_programs.PROGRAMS[name]
    function, args, options = builder()
    args = jax.tree_util.tree_map(np.asarray, args)
    expected = jax.jit(function, keep_unused=True, **options)(*jax.tree_util.tree_map(jnp.asarray, args))
    if form == "text":
        artifact = _text(function, args, keep_unused=True, **options)
        assert artifact.startswith("module @")
    else:
        artifact = (_artifact(function, args, keep_unused=True, **options) if form == "export"
                    else _plugin_artifact(function, args, form, keep_unused=True, **options))
        assert artifact.startswith(b"ML\xefR") and (form == "export" or f"StableHLO_v{form}".encode() in artifact[:32])
    executable = insitu.compile(artifact)
    got = executable(*[np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(args)])
    assert_corpus_leaves_match(name, got if isinstance(got, tuple) else (got,), jax.tree_util.tree_leaves(expected))
    assert executable.stats["fallback_ops_executed"] == 0, executable.fallback_ops


def test_donated_cache_is_updated_in_place_from_the_artifact(tmp_path):
    def step(cache, row, pos):
        return cache.at[:, pos].set(row)

    cache = np.zeros((4, 64, 8), np.float32)
    row = np.ones((4, 8), np.float32)
    artifact = _artifact(step, (cache, row, np.int32(5)), donate_argnums=0)
    path = tmp_path / "step.mlirbc"
    path.write_bytes(artifact)
    executable = insitu.compile(path)  # a path to a .mlirbc file, read as bytecode
    assert executable.parameters[0]["aliased"]
    out = executable(cache, row, np.int32(5), donate=[0])  # the numpy array itself is written
    np.testing.assert_array_equal(cache[:, 5], row)
    assert np.asarray(out).__array_interface__["data"][0] == cache.__array_interface__["data"][0]
    assert executable.stats["bytes_copied"] == 0 and executable.stats["bytes_written"] < 4 * 8 * 4 * 2


def test_bad_bytecode_is_a_located_error():
    artifact = _artifact(lambda a: a + 1, (np.zeros(4, np.float32),))
    with pytest.raises(insitu.Error, match=r"byte \d+: "):
        insitu.compile(artifact[: len(artifact) // 2])
    with pytest.raises(insitu.Error, match=r"MLIR bytecode version 5 is not read"):
        insitu.compile(artifact[:4] + b"\x0b" + artifact[5:])


@pytest.mark.parametrize("form", ["jax_export", "mlir"])
def test_exported_decode_step_runs_from_the_cli_in_place(tmp_path, build_dir, form):
    """jax.export of a decode step (layers scanned with the caches as xs/ys, the state donated),
    saved with Exported.serialize() (or its StableHLO text, lowered.as_text(), saved as .mlir),
    runs from `insitu run` with no Python: JAX's values, the cache updated in place (0 bytes
    copied, far fewer written than the cache holds)."""
    import json
    import subprocess

    sys.path.insert(0, str(REPO / "bench" / "python"))
    import decode_spellings as spellings

    spellings.set_size("small")
    spellings.POSITIONS = 256  # caches of 32 KB each: larger than what a step writes
    rng = np.random.default_rng(0)
    width = spellings.WIDTH
    params = tuple(rng.standard_normal(shape).astype(np.float32) * 0.1 for shape in
                   [(spellings.LAYERS, width, 3 * width), (spellings.LAYERS, width, width),
                    (spellings.LAYERS, width, 4 * width), (spellings.LAYERS, 4 * width, width)])
    cache_shape = (spellings.LAYERS, spellings.HEADS, spellings.POSITIONS, spellings.HEAD)
    state = (rng.standard_normal(cache_shape).astype(np.float32), rng.standard_normal(cache_shape).astype(np.float32))
    x = rng.standard_normal(width).astype(np.float32)
    pos = np.int32(3)
    args = (params, state, x, pos)
    jitted = jax.jit(spellings.scan_xs_ys, donate_argnums=1)
    artifact = tmp_path / f"decode.{form}"
    if form == "mlir":
        artifact.write_text(jitted.lower(*jax.tree_util.tree_map(jnp.asarray, args)).as_text())
    else:
        artifact.write_bytes(export.export(jitted)(*jax.tree_util.tree_map(jnp.asarray, args)).serialize())
    expected = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(
        jax.jit(spellings.scan_xs_ys)(*jax.tree_util.tree_map(jnp.asarray, args)))]

    command = [str(build_dir / "tools" / "insitu"), "run", str(artifact), "--save", str(tmp_path / "out"),
               "--stats", str(tmp_path / "stats.json")]
    for i, leaf in enumerate(jax.tree_util.tree_leaves(args)):
        np.save(tmp_path / f"arg{i}.npy", np.asarray(leaf))
        command += ["--arg", str(tmp_path / f"arg{i}.npy")]
    subprocess.run(command, check=True, capture_output=True, text=True)
    for i, want in enumerate(expected):
        np.testing.assert_allclose(np.load(tmp_path / "out" / f"output_{i}.npy"), want, rtol=1e-5, atol=1e-5)
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["bytes_copied"] == 0 and stats["bytes_staged"] == 0
    assert stats["bytes_written"] < state[0].nbytes  # the new rows and activations, not the caches
    spellings.set_size("small")


def test_exported_artifact_for_several_platforms_is_refused(tmp_path):
    exported = export.export(jax.jit(lambda a: a * 2), platforms=("cpu", "cuda"))(jnp.zeros(4, jnp.float32))
    with pytest.raises(insitu.Error, match=r"exported for 2 platforms"):
        insitu.compile(exported.serialize())


def test_an_op_not_read_names_its_source_line():
    def uses_rng(a):
        return jax.lax.rng_uniform(a, a + 1.0, (4,))  # stablehlo.rng: not read by insitu yet

    line = uses_rng.__code__.co_firstlineno + 1
    artifact = _artifact(uses_rng, (np.float32(0),))
    with pytest.raises(insitu.Error, match=rf"byte \d+ \(.*test_stablehlo\.py:{line}\): vhlo\.rng_v1 is not read"):
        insitu.compile(artifact)


def test_dynamic_shapes_are_refused_with_the_reason():
    exported = export.export(jax.jit(lambda x: jnp.sin(x) * 2))(
        jax.ShapeDtypeStruct(export.symbolic_shape("b, 4"), jnp.float32))
    with pytest.raises(insitu.Error, match=r"a dynamic dimension \(insitu needs static shapes\)"):
        insitu.compile(exported.serialize())


def test_reduce_precision_gives_jaxs_values():
    def f(x):
        return jax.lax.reduce_precision(jnp.sin(x), exponent_bits=5, mantissa_bits=10)

    x = np.linspace(-3, 3, 64).astype(np.float32)
    got = insitu.compile(_artifact(f, (x,)))(x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(jax.jit(f)(x)))


def test_a_broadcast_stretching_a_unit_dimension():
    """x - mean(x, keepdims=True): StableHLO broadcasts the [4, 1] mean over [4, 6] (a dimension
    of size 1 stretched), which insitu reads as XLA's import does: reshape, then broadcast."""
    def f(x):
        return x - jnp.mean(x, axis=-1, keepdims=True)

    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    artifact = _artifact(f, (x,))
    np.testing.assert_allclose(np.asarray(insitu.compile(artifact)(x)), np.asarray(jax.jit(f)(x)), rtol=1e-6)


def test_text_with_a_donated_cache_is_updated_in_place_from_a_path(tmp_path):
    def step(cache, row, pos):
        return cache.at[:, pos].set(row)

    cache = np.zeros((4, 64, 8), np.float32)
    row = np.ones((4, 8), np.float32)
    path = tmp_path / "step.mlir"
    path.write_text(_text(step, (cache, row, np.int32(5)), donate_argnums=0))
    executable = insitu.compile(path)
    assert executable.parameters[0]["aliased"]
    out = executable(cache, row, np.int32(5), donate=[0])
    np.testing.assert_array_equal(cache[:, 5], row)
    assert np.asarray(out).__array_interface__["data"][0] == cache.__array_interface__["data"][0]
    assert executable.stats["bytes_copied"] == 0


def test_chlo_ops_in_text_give_jaxs_values():
    """The CHLO ops JAX leaves in its text: erf_inv (expanded as XLA does), square, top_k, and
    the elementwise functions insitu has as HLO ops (sinh, asin, ...)."""
    x = np.linspace(-0.999, 0.999, 50, dtype=np.float32).reshape(5, 10)

    def f(v):
        values, indices = jax.lax.top_k(v, 3)
        return (jax.scipy.special.erfinv(v), jnp.square(v), values, indices, jnp.sinh(v), jnp.arcsin(v),
                jnp.arccosh(v + 2.0), jnp.arctanh(v * 0.5), jax.lax.erf(v))

    text = _text(f, (x,))
    assert "chlo.erf_inv" in text and "chlo.top_k" in text and "chlo.square" in text
    got = insitu.compile(text)(x)
    for g, w in zip(got, jax.jit(f)(x)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-6, atol=2e-6)


def test_bad_text_is_an_error_with_line_and_column():
    text = _text(lambda a: a + 1, (np.zeros(4, np.float32),))
    broken = text.replace("stablehlo.add", "stablehlo.addd", 1)
    with pytest.raises(insitu.Error, match=r"<module>:\d+:\d+: .*stablehlo.addd"):
        insitu.compile(broken)


def test_shardy_meshes_and_constraints_in_text_are_placement():
    """sdy.mesh at the module's top and sdy.sharding_constraint (JAX writes one for a typed PRNG
    key, and for with_sharding_constraint) place values on one device without changing them."""
    from jax.sharding import AxisType, NamedSharding, PartitionSpec

    mesh = jax.make_mesh((1,), ("x",), axis_types=(AxisType.Auto,))

    def f(x, key):
        y = jax.lax.with_sharding_constraint(x * 2, NamedSharding(mesh, PartitionSpec("x")))
        return y + jax.random.uniform(key, (4,))

    x = np.arange(4, dtype=np.float32)
    key = jax.random.key(0)
    text = _text(f, (x, key))
    assert "sdy.mesh" in text and "sdy.sharding_constraint" in text
    got = insitu.compile(text)(x, np.asarray(jax.random.key_data(key)))
    np.testing.assert_allclose(np.asarray(got), np.asarray(jax.jit(f)(x, key)), rtol=1e-6)
