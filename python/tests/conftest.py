"""Shared fixtures of the Python package's tests (scripts/test runs them after ctest)."""
import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]

# The insitu JAX device (test_pjrt.py), registered before any test makes JAX's backends, as the
# jax_plugins entry point does in an installed package (CPU stays JAX's default device).
try:
    import jax  # noqa: F401
except ImportError:
    pass
else:
    import insitu.jax_plugin

    insitu.jax_plugin.initialize()


def assert_corpus_leaves_match(name, got, want):
    """A JAX corpus program's result leaves (bench/peers/jax_programs.py) against JAX's: same
    dtypes and shapes, exact for integers, within a few ulps of f32 for floats (linalg and fft
    accumulate differently from XLA's LAPACK/ducc calls: a few ulps of the condition number)."""
    import numpy as np

    assert len(got) == len(want)
    tolerance = 2e-4 if name.startswith(("linalg", "fft")) else 2e-5
    for w, h in zip(want, got):
        w, h = np.asarray(w), np.asarray(h)
        assert w.dtype == h.dtype and w.shape == h.shape
        if np.issubdtype(w.dtype, np.inexact):
            np.testing.assert_allclose(h, w, rtol=tolerance, atol=tolerance)
        else:
            np.testing.assert_array_equal(h, w)


@pytest.fixture(scope="session")
def build_dir():
    """The CMake build the package came from (scripts/test sets INSITU_BUILD_DIR)."""
    return pathlib.Path(os.environ.get("INSITU_BUILD_DIR", REPO / "build"))


@pytest.fixture(scope="session")
def examples_plugin(build_dir):
    """The example kernels (plus_one, tiled_axpy, adam_step) as a plugin, loaded once."""
    import insitu

    path = build_dir / "examples" / "libinsitu_examples.so"
    if not path.exists():
        pytest.fail(f"{path} is missing: build the 'insitu_examples' target")
    insitu.load_plugin(path)
    return path


@pytest.fixture
def fresh_dynamo():
    """torch.compile's caches reset and insitu.torch's graph list cleared around a test (the
    torch test modules use it for every test: `pytestmark = pytest.mark.usefixtures(...)`)."""
    import torch

    import insitu.torch

    torch._dynamo.reset()
    insitu.torch.compiled_graphs.clear()
    yield
