"""The seed's script (examples/seed/pallas_inplace_question.txt) as its author wrote it, with only
torch_xla's names swapped for insitu's: a Pallas kernel in Python, input_output_aliases={0:0},
jax.jit(donate_argnums=[0]), wrapped for PyTorch with make_kernel_from_pallas inside a
torch.library.custom_op that mutates x, compiled with torch.compile. No C++ is written. The
custom op is lowered into the compiled graph: its Pallas kernel runs in insitu's program for the
graph, writing into x's own storage.

    python examples/python/seed_pallas_torch.py
"""
from functools import partial

import jax
import torch
from jax.experimental import pallas as pl

import insitu.torch


def plus_one_kernel(x_ref, o_ref):
    o_ref[:] = o_ref[:] + 1


@partial(jax.jit, donate_argnums=[0])
def plus_one_pallas(x: jax.Array):
    return pl.pallas_call(
        plus_one_kernel,
        grid=(1, 1),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        input_output_aliases={0: 0}
    )(x)


plus_one_pt = insitu.torch.make_kernel_from_pallas(plus_one_pallas, output_shape_dtype_fn=lambda x: [(x.shape, x.dtype)])


@torch.library.custom_op("seed::plus_one_", mutates_args=("x", ))
def plus_one_(x: torch.Tensor) -> None:
    plus_one_pt(x)


def fn(x):
    insitu.torch.donate(x)
    return plus_one_(x)


fn = torch.compile(fn, backend="insitu")

for dtype in (torch.int32, torch.float32, torch.bfloat16):
    x = torch.ones(4, dtype=dtype)
    pointer = x.data_ptr()
    fn(x)
    graph = insitu.torch.compiled_graphs[-1]  # the graph torch.compile made of fn, run by insitu
    stats = graph.stats
    print(f"x = {x}; same storage: {x.data_ptr() == pointer}; bytes copied: {stats['bytes_copied']}, "
          f"copies: {len(stats['copies_in_module'])}; kernels: {[k['name'] for k in stats['pallas_kernels']]}")
print(graph.explain())
