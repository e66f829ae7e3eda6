"""insitu kernels as torch custom ops: eager calls, and the table the lowering reads."""
from __future__ import annotations

import torch

import insitu

from ._types import _shape_text, write_back

# op overload -> (insitu kernel name, {output index: operand index})
_KERNEL_OPS = {}
_kernel_executables = {}


def _kernel_call_text(name, target, operands, shapes, aliases):
    """`name = (outputs) custom-call(operands)` of insitu kernel `target`: output k is written
    into operand aliases[k] (every output of an insitu kernel op aliases an operand, as
    Pallas's input_output_aliases), so its shape is that operand's (`shapes`: HLO shape texts)."""
    outs = ", ".join(shapes[aliases[k]] for k in range(len(aliases)))
    alias = ", ".join(f"{{{k}}}: ({operand}, {{}})" for k, operand in aliases.items())
    return (f"  {name} = ({outs}) custom-call({', '.join(operands)}), custom_call_target=\"{target}\", "
            f"output_to_operand_aliasing={{{alias}}}")


def _kernel_module(target, shapes, aliases):
    """An HLO module calling kernel `target` once on its parameters, the written ones aliased to
    the outputs (so that a donated argument is written in place)."""
    params = [f"  p{i} = {s} parameter({i})" for i, s in enumerate(shapes)]
    module_alias = ", ".join(f"{{{k}}}: ({operand}, {{}}, may-alias)" for k, operand in aliases.items())
    call = _kernel_call_text("k", target, [f"p{i}" for i in range(len(shapes))], shapes, aliases)
    return (f"HloModule kernel_{target}, input_output_alias={{ {module_alias} }}\n\nENTRY main {{\n"
            + "\n".join(params) + "\n  ROOT" + call[1:] + "\n}\n")


def kernel_call(target, *tensors, writes=(0,)):
    """Runs insitu kernel `target` (registered in C++ or loaded with insitu.load_plugin) on
    `tensors`, writing its outputs into the operands numbered in `writes`, in place."""
    writes = tuple(writes)
    aliases = dict(enumerate(writes))
    shapes = tuple(_shape_text(t.dtype, tuple(t.shape)) for t in tensors)
    key = (target, shapes, writes)
    exe = _kernel_executables.get(key)
    if exe is None:
        exe = _kernel_executables[key] = insitu.compile(_kernel_module(target, shapes, aliases))
    donate = [i for i in writes if tensors[i].is_contiguous()]
    results = exe(*[t.detach() for t in tensors], donate=donate)
    write_back((tensors[i], torch.from_dlpack(results[k])) for k, i in enumerate(writes) if i not in donate)


def kernel(target, *, aliases=None):
    """Makes a ``torch.library.custom_op`` run insitu kernel `target`, eagerly and inside
    ``torch.compile(backend="insitu")`` (as a custom call, in place):

        @insitu.torch.kernel("plus_one")
        @torch.library.custom_op("demo::plus_one_", mutates_args=("x",))
        def plus_one_(x: torch.Tensor) -> None: ...

    A mutating op writes the operands named in mutates_args. A functional op must say which
    operand each output overwrites (``aliases={0: 0}``: output 0 in operand 0's buffer, Pallas's
    input_output_aliases): insitu copies the operand first unless the caller donated it."""

    def wrap(op):
        schema = op._opoverload._schema
        mutated = tuple(i for i, a in enumerate(schema.arguments) if a.alias_info is not None and a.alias_info.is_write)
        if mutated:
            mapping = dict(enumerate(mutated))
        elif aliases:
            mapping = dict(aliases)
        else:
            raise ValueError(f"{op._qualname}: an insitu kernel op must mutate its operands (mutates_args) "
                             "or say which operand each output overwrites (aliases={0: 0})")
        _KERNEL_OPS[op._opoverload] = (target, mapping, bool(mutated))

        def impl(*args):
            if mutated:
                kernel_call(target, *args, writes=mutated)
                return None
            outs = [args[operand].clone() for operand in mapping.values()]
            operands = list(args)
            for k, operand in enumerate(mapping.values()):
                operands[operand] = outs[k]
            kernel_call(target, *operands, writes=tuple(mapping.values()))
            return outs[0] if len(outs) == 1 else tuple(outs)

        op.register_kernel("cpu")(impl)
        return op

    return wrap


@torch.library.custom_op("insitu::donate_", mutates_args=("x",))
def _donate(x: torch.Tensor) -> None:
    """Eagerly nothing: a donation only means something to a compiler."""


def donate(x):
    """Marks `x` a buffer donor inside a function compiled with backend="insitu": the program may
    reuse its buffer for a result of the same shape (explain says which, or why not), and then
    `x` holds that result after the call. Outside torch.compile it does nothing."""
    _donate(x)
