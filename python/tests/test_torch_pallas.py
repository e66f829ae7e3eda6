"""A torch.library custom op whose implementation calls Pallas kernels through
insitu.torch.make_kernel_from_pallas, compiled with torch.compile(backend="insitu"): lowered into
the graph (no eager fallback), in place where the kernel donates and aliases, and falling back
whole, with a warning, where the implementation does anything else with its tensors."""
import functools
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.experimental import pallas as pl  # noqa: E402

import insitu.torch  # noqa: E402


def plus_one_kernel(x_ref, o_ref):
    o_ref[:] = o_ref[:] + 1


@functools.partial(jax.jit, donate_argnums=[0])
def plus_one_pallas(x):
    return pl.pallas_call(plus_one_kernel, grid=(1, 1), out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          input_output_aliases={0: 0})(x)


def double_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2


def double_pallas(x):  # not donated, not aliased: a new array
    return pl.pallas_call(double_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


plus_one_pt = insitu.torch.make_kernel_from_pallas(plus_one_pallas, lambda x: [(x.shape, x.dtype)])
double_pt = insitu.torch.make_kernel_from_pallas(double_pallas, lambda x: [(x.shape, x.dtype)])


@torch.library.custom_op("insitu_pallas_test::plus_one_", mutates_args=("x",))
def plus_one_(x: torch.Tensor) -> None:
    plus_one_pt(x)


@torch.library.custom_op("insitu_pallas_test::double", mutates_args=())
def double(x: torch.Tensor) -> torch.Tensor:
    return double_pt(x)


@double.register_fake
def _(x):
    return torch.empty_like(x)


@torch.library.custom_op("insitu_pallas_test::double_into_", mutates_args=("x",))
def double_into_(x: torch.Tensor) -> None:
    x.copy_(double_pt(x))


@torch.library.custom_op("insitu_pallas_test::plus_one_then_more_", mutates_args=("x",))
def plus_one_then_more_(x: torch.Tensor) -> None:
    plus_one_pt(x)
    x.mul_(3)  # torch work beside the kernel: insitu cannot see it, so the graph runs eagerly


def _compiled(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="insitu")


@pytest.mark.parametrize("dtype", [torch.int32, torch.float32, torch.bfloat16])
def test_the_seed_custom_op_is_lowered_into_the_graph_and_updates_x_in_place(dtype):
    def fn(x):
        insitu.torch.donate(x)
        return plus_one_(x)

    compiled = _compiled(fn)
    x = torch.ones(8, 128, dtype=dtype)
    pointer = x.data_ptr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback
        compiled(x)
        compiled(x)
    assert x.data_ptr() == pointer
    torch.testing.assert_close(x, torch.full((8, 128), 3, dtype=dtype))
    graph = insitu.torch.compiled_graphs[-1]
    stats = graph.stats
    assert graph.executable is not None and stats["bytes_copied"] == 0
    assert [k["name"] for k in stats["pallas_kernels"]] == ["plus_one_kernel"]
    assert "pallas kernel plus_one_kernel" in graph.explain() and "in place" in graph.explain()


def test_a_functional_custom_op_and_torch_around_it_compile_whole():
    def fn(x):
        return double(x + 1.0).sum(dim=0)

    compiled = _compiled(fn)
    x = torch.randn(16, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = compiled(x)
    torch.testing.assert_close(out, ((x + 1.0) * 2).sum(dim=0))
    assert insitu.torch.compiled_graphs[-1].stats["pallas_kernels"][0]["name"] == "double_kernel"


def test_copy_between_recorded_tensors_is_a_mutation():
    compiled = _compiled(lambda x: double_into_(x))
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    expected = x * 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled(x)
    torch.testing.assert_close(x, expected)


def test_an_implementation_doing_more_runs_eagerly_with_a_warning():
    compiled = _compiled(lambda x: plus_one_then_more_(x))
    x = torch.ones(4)
    with pytest.warns(UserWarning, match="mul_"):
        compiled(x)
    torch.testing.assert_close(x, torch.full((4,), 6.0))
    assert insitu.torch.compiled_graphs[-1].executable is None


def scale_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 3.0


scale_pt = insitu.torch.make_kernel_from_pallas(
    lambda x: pl.pallas_call(scale_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x),
    lambda x: [(x.shape, x.dtype)])


@torch.library.custom_op("insitu_pallas_test::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return scale_pt(x)


@scale.register_fake
def _(x):
    return torch.empty_like(x)


scale.register_autograd(lambda ctx, grad: scale(grad))  # d(3x)/dx = 3, as a Pallas kernel too


def test_gradients_through_a_pallas_custom_op_match_eager_in_float64():
    def fn(x, w):
        return (scale(x * w).sin() * w).sum()

    x = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    w = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    with jax.enable_x64(True):
        eager = torch.autograd.grad(fn(x, w), (x, w))
        compiled = _compiled(fn)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # forward and backward both lowered, no eager fallback
            got = torch.autograd.grad(compiled(x, w), (x, w))
    for e, g in zip(eager, got):
        torch.testing.assert_close(g, e, rtol=1e-12, atol=1e-12)
    assert any("scale_kernel" in (g.text or "") for g in insitu.torch.compiled_graphs[-2:])


def test_eagerly_a_strided_view_gets_the_kernels_result_copied_back():
    """A donated tensor the kernel cannot write where it lies (every other column of a larger
    tensor) runs on a copy and the result is written back into the view; the rest is untouched."""
    base = torch.zeros(4, 16, dtype=torch.float32)
    view = base[:, ::2]
    assert not view.is_contiguous()
    plus_one_pt(view)
    assert torch.equal(base[:, ::2], torch.ones(4, 8)) and torch.equal(base[:, 1::2], torch.zeros(4, 8))
