"""A JAX function holding Pallas kernels, called on torch tensors: torch_xla's
``make_kernel_from_pallas`` call shape, run by insitu on the CPU.

    pt = insitu.torch.make_kernel_from_pallas(plus_one_pallas, lambda x: [(x.shape, x.dtype)])
    pt(x)                       # x updated in place where plus_one_pallas donates it

Unlike torch_xla (which keeps only the first custom call's payload and drops the aliasing), the
whole JAX function is compiled (jnp code around the kernels and several pallas_calls included,
the kernels through insitu/pallas.py), and a tensor the function donates (its own
``jax.jit(..., donate_argnums=...)``) and aliases to a result is that result: the kernel writes
into the tensor's storage, 0 bytes copied. Tensors cross by DLPack without a copy. One
executable per (shapes, dtypes, static arguments).

Inside ``torch.compile(backend="insitu")``, a custom op whose implementation only calls such
kernels on its tensors (the seed's ``plus_one_`` op) is lowered into the graph: the lowering
runs the implementation on :class:`Recorded` stand-ins, which give only their shape and dtype,
and each call becomes the JAX function's HLO, called in the graph's module (its donated,
aliased arguments written in place). An implementation that does anything else with a tensor
fails there, and the graph runs eagerly, as before.
"""
from __future__ import annotations

import torch

import insitu

from ._types import write_back

_DTYPES = {torch.float32: "float32", torch.float64: "float64", torch.float16: "float16", torch.bfloat16: "bfloat16",
           torch.int32: "int32", torch.int64: "int64", torch.int16: "int16", torch.int8: "int8", torch.uint8: "uint8",
           torch.bool: "bool"}


def make_kernel_from_pallas(kernel, output_shape_dtype_fn):
    """torch_xla's make_kernel_from_pallas, on insitu. `kernel`: a JAX function (jax.jit-wrapped
    or not) whose tensor arguments are torch tensors at the call; `output_shape_dtype_fn(*args)`
    gives a list of (shape, torch dtype), one per result, checked against what the function
    returns. Returns ``pt(*args, static_argnums=None, static_argnames=None, **kwargs)``: one
    tensor, or a tuple when there are several results."""
    import jax

    from insitu.jax import _lowering_parameters

    executables = {}

    def build(args, static_argnums, static_argnames, kwargs):
        specs = []
        for a in args:
            if isinstance(a, (torch.Tensor, Recorded)):
                if a.dtype not in _DTYPES:
                    raise TypeError(f"make_kernel_from_pallas: tensor of dtype {a.dtype} has no JAX type here")
                specs.append(jax.ShapeDtypeStruct(tuple(a.shape), _DTYPES[a.dtype]))
            else:
                specs.append(a)
        # a jitted kernel keeps its own donation (what makes the update in place); another jit
        # around it would drop it, so one is added only where static arguments need it
        if hasattr(kernel, "trace") and static_argnums is None and static_argnames is None:
            target = kernel
        else:
            target = jax.jit(kernel, static_argnums=static_argnums, static_argnames=static_argnames)
        lowered = target.trace(*specs, **kwargs).lower(_private_parameters=_lowering_parameters())
        executable = insitu.compile(lowered.as_text(dialect="hlo"))
        tensor_positions = [i for i, a in enumerate(args) if isinstance(a, (torch.Tensor, Recorded))]
        if len(executable.parameters) != len(tensor_positions):
            raise insitu.Error(f"make_kernel_from_pallas: the function takes {len(executable.parameters)} arrays; "
                               f"it was called with {len(tensor_positions)} tensors")
        donated = [k for k, p in enumerate(executable.parameters) if p["aliased_output"] is not None]
        return executable, tensor_positions, donated, lowered

    def pt(*args, static_argnums=None, static_argnames=None, **kwargs):
        if any(isinstance(a, Recorded) for a in args):
            return _record(build, output_shape_dtype_fn, args, static_argnums, static_argnames, kwargs)
        key = (tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else ("static", a) for a in args),
               _hashable(static_argnums), _hashable(static_argnames), tuple(sorted(kwargs.items())))
        if key not in executables:
            executables[key] = build(args, static_argnums, static_argnames, kwargs)
        executable, positions, donated, _ = executables[key]
        tensors = [args[i].detach() for i in positions]
        # a donated tensor the kernel cannot write where it lies (not contiguous) gets its result copied in
        writable = [k for k in donated if tensors[k].is_contiguous()]
        results = executable(*tensors, donate=writable)
        pt.executable = executable
        results = results if isinstance(results, tuple) else (results,)
        outs = [torch.from_dlpack(r) for r in results]
        write_back((tensors[k], outs[executable.parameters[k]["aliased_output"]]) for k in donated if k not in writable)
        expected = output_shape_dtype_fn(*args)
        if len(expected) != len(outs):
            raise insitu.Error(f"make_kernel_from_pallas: output_shape_dtype_fn gives {len(expected)} results; "
                               f"the function returns {len(outs)}")
        for n, ((shape, dtype), out) in enumerate(zip(expected, outs)):
            if tuple(shape) != tuple(out.shape) or dtype != out.dtype:
                raise insitu.Error(f"make_kernel_from_pallas: result {n} is {tuple(out.shape)} {out.dtype}; "
                                   f"output_shape_dtype_fn says {tuple(shape)} {dtype}")
        return outs[0] if len(outs) == 1 else tuple(outs)

    pt.executable = None  # the last call's insitu.Executable (stats, explain)
    return pt


class Recorded:
    """A tensor argument of a custom op while insitu's torch lowering runs the op's
    implementation: its shape and dtype can be read, ``copy_`` from another one is recorded, and
    a make_kernel_from_pallas call on it becomes HLO in the graph (`value`: the HLO value it
    holds now). Anything else a tensor would do raises, and the graph runs eagerly."""

    def __init__(self, lowering, value, dtype, shape):
        self._lowering, self.value, self.dtype, self.shape = lowering, value, dtype, torch.Size(shape)

    @property
    def ndim(self):
        return len(self.shape)

    def dim(self):
        return len(self.shape)

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def copy_(self, other):
        if not isinstance(other, Recorded) or other.shape != self.shape or other.dtype != self.dtype:
            raise TypeError("copy_ between recorded tensors of one shape and dtype only")
        self.value = other.value
        return self

    def __getattr__(self, name):
        raise TypeError(f"a custom op lowered by insitu may only pass its tensors to insitu Pallas kernels "
                        f"(and copy_ between them); it used tensor.{name}")


def _record(build, output_shape_dtype_fn, args, static_argnums, static_argnames, kwargs):
    """pt's call on Recorded arguments: the JAX function's HLO called in the graph being lowered;
    donated, aliased arguments then hold the results written into them."""
    executable, positions, donated, lowered = build(args, static_argnums, static_argnames, kwargs)
    tensors = [args[i] for i in positions]
    if not all(isinstance(t, Recorded) for t in tensors):
        raise TypeError("make_kernel_from_pallas: a call mixing recorded and real tensors")
    lowering = tensors[0]._lowering
    expected = [(torch.Size(shape), dtype) for shape, dtype in output_shape_dtype_fn(*args)]
    values = lowering.inline_hlo(lowered.as_text(dialect="hlo"), [t.value for t in tensors],
                                 [(dtype, tuple(shape)) for shape, dtype in expected])
    outs = [Recorded(lowering, v, dtype, shape) for v, (shape, dtype) in zip(values, expected)]
    for k in donated:
        out = outs[executable.parameters[k]["aliased_output"]]
        if out.shape != tensors[k].shape or out.dtype != tensors[k].dtype:
            raise TypeError(f"make_kernel_from_pallas: result aliased to argument {k} differs from it")
        tensors[k].value = out.value
    return outs[0] if len(outs) == 1 else tuple(outs)


def _hashable(value):
    if value is None or isinstance(value, (int, str)):
        return value
    return tuple(value)
