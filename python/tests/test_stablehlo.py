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
from conftest import REPO  # noqa: E402

sys.path.insert(0, str(REPO / "bench" / "peers"))
import jax_programs  # noqa: E402


def _artifact(function, args, **options):
    """The VHLO artifact jax.export writes for jax.jit(function) at these arguments."""
    exported = export.export(jax.jit(function, **options))(*jax.tree_util.tree_map(jnp.asarray, args))
    return exported.mlir_module_serialized


def _tolerance(name):
    return dict(rtol=2e-4, atol=2e-4) if name.startswith(("linalg", "fft")) else dict(rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name", sorted(jax_programs.PROGRAMS))
def test_corpus_program_from_its_vhlo_artifact(name):
    _, builder = jax_programs.PROGRAMS[name]
    function, args, options = builder()
    args = jax.tree_util.tree_map(np.asarray, args)
    expected = jax.jit(function, keep_unused=True, **options)(*jax.tree_util.tree_map(jnp.asarray, args))
    executable = insitu.compile(_artifact(function, args, keep_unused=True, **options))
    got = executable(*[np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(args)])
    got = got if isinstance(got, tuple) else (got,)
    want = jax.tree_util.tree_leaves(expected)
    assert len(got) == len(want)
    for w, h in zip(want, got):
        w, h = np.asarray(w), np.asarray(h)
        assert w.dtype == h.dtype and w.shape == h.shape
        if np.issubdtype(w.dtype, np.inexact):
            np.testing.assert_allclose(h, w, **_tolerance(name))
        else:
            np.testing.assert_array_equal(h, w)
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
