"""The seed's script (examples/seed/pallas_inplace_question.txt), on insitu: an in-place kernel
wrapped as a torch custom op with mutates_args, the input marked as a donor, compiled with
torch.compile. With torch_xla the mutation never reached x; here x holds the new values and the
compiled module has 0 copies. Both spellings: the mutating op, and a functional op with donation.

    python examples/python/seed_torch.py [PATH/TO/libinsitu_examples.so]
"""
import pathlib
import sys

import torch

import insitu
import insitu.torch

# The kernel: plus_one from the example plugin (examples/kernels/plus_one.cc), a Pallas-style
# grid kernel declared with input_output_aliases={0: 0}.
plugin = sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[2] / "build/examples/libinsitu_examples.so"
insitu.load_plugin(plugin)


@insitu.torch.kernel("plus_one")
@torch.library.custom_op("seed::plus_one_", mutates_args=("x",))
def plus_one_(x: torch.Tensor) -> None:
    """Adds one to x in place (the insitu kernel runs, eagerly and compiled)."""


@insitu.torch.kernel("plus_one", aliases={0: 0})
@torch.library.custom_op("seed::plus_one", mutates_args=())
def plus_one(x: torch.Tensor) -> torch.Tensor:
    """x + 1 in a new tensor; with x donated, in x's buffer."""


@plus_one.register_fake
def _(x):
    return torch.empty_like(x)


def fn(x):
    insitu.torch.donate(x)  # the seed's torch.ops.xla.dynamo_set_buffer_donor_(x, True)
    return plus_one_(x)


def fn_functional(x):
    insitu.torch.donate(x)
    return plus_one(x)


for name, f in [("mutating op", fn), ("functional op + donation", fn_functional)]:
    x = torch.ones(4, dtype=torch.int32)
    torch.compile(f, backend="insitu")(x)
    graph = insitu.torch.compiled_graphs[-1]
    print(f"{name}: x = {x}")
    print(f"  copies in the compiled module: {len(graph.stats['copies_in_module'])}, "
          f"bytes copied: {graph.stats['bytes_copied']}")
    print("  " + graph.explain().strip().replace("\n", "\n  "))
