"""insitu as a torch.compile backend, and insitu kernels as torch custom ops.

    import insitu.torch
    step = torch.compile(step, backend="insitu")      # registered on import, and as an entry point

The backend takes the graphs AOTAutograd makes (functionalized, with torch's core-ATen
decompositions), lowers each to an HLO module and runs it on insitu's CPU runtime:

- a graph input the program mutates (``param.add_(...)``, an optimizer step, a mutating custom
  op; the ``copy_`` epilogue of a functionalized graph) becomes an input/output alias and is
  donated, so the new values are written into that tensor's own storage (same ``data_ptr``), with
  no copy. (An input that is not contiguous cannot be written in place: it gets the result by one
  ``copy_``, counted in ``CompiledGraph.copied_back_bytes``.)
- a custom op whose implementation is an insitu kernel (:func:`kernel`) runs as a custom call that
  aliases the operands it writes;
- :func:`donate` marks an input whose buffer the program may reuse for a result (a buffer donor);
  after the call that tensor holds the result it was reused for;
- a graph with an op this module cannot lower runs eagerly, as torch would, with one warning
  naming the op; :data:`compiled_graphs` records it with the reason.

Every graph compiled is appended to :data:`compiled_graphs` (a :class:`CompiledGraph`: its HLO
text, ``explain()``, the last call's ``stats``, or the fallback reason).
"""
from __future__ import annotations

import warnings

import torch

import insitu

from . import _ops, _ops_index, _ops_nn  # noqa: F401  (each registers its lowerings)
from ._kernels import donate, kernel, kernel_call
from ._lowering import _Lowering
from ._types import Unsupported

__all__ = ["backend", "kernel", "kernel_call", "donate", "compiled_graphs", "CompiledGraph", "Unsupported"]

#: Every graph the backend compiled, in order (forward and backward graphs separately).
compiled_graphs: list = []


class CompiledGraph:
    """One FX graph the backend compiled: its HLO text and executable, or why it runs eagerly."""

    def __init__(self, name, text=None, executable=None, fallback=None):
        self.name, self.text, self.executable, self.fallback = name, text, executable, fallback
        self.copied_back_bytes = 0  # results copied into inputs that could not be written in place

    def explain(self, format="text"):
        if self.executable is None:
            return f"graph {self.name} runs eagerly in torch: {self.fallback}"
        return self.executable.explain(format)

    @property
    def stats(self):
        return {} if self.executable is None else dict(self.executable.stats, copied_back_bytes=self.copied_back_bytes)

    def __repr__(self):
        return f"CompiledGraph({self.name}, {'insitu' if self.executable else 'eager: ' + str(self.fallback)})"


def _compile_graph(gm, example_inputs):
    from torch._functorch.aot_autograd import make_boxed_func

    name = f"torch_graph_{len(compiled_graphs)}"
    text = None
    try:
        text, plan, written, donors = _Lowering(gm, name).run()
        executable = insitu.compile(text)
    except (Unsupported, insitu.Error) as e:
        # insitu.Error here is a lowering this module got wrong: still the user's answer, from torch.
        reason = str(e) if isinstance(e, Unsupported) else f"insitu rejected the lowered module: {e}"
        record = CompiledGraph(name, text=text, fallback=reason)
        compiled_graphs.append(record)
        warnings.warn(f"insitu: graph {name} runs eagerly in torch: {reason}", stacklevel=2)
        return make_boxed_func(gm.forward)
    record = CompiledGraph(name, text, executable)
    compiled_graphs.append(record)
    in_place = set(written) | set(donors)

    core = executable._core
    to_capsule, from_capsule = torch._C._to_dlpack, torch._C._from_dlpack  # what torch.{to,from}_dlpack call

    def run(args):
        tensors = [a.detach() if isinstance(a, torch.Tensor) and a.requires_grad else a for a in args]
        args.clear()
        donate = []
        if in_place:
            pointers = [t.data_ptr() for t in tensors]
            donate = [i for i in in_place if tensors[i].is_contiguous() and pointers.count(pointers[i]) == 1]
        results = core(tuple(to_capsule(t) if isinstance(t, torch.Tensor) else t for t in tensors), donate=donate,
                       threads=insitu.default_threads, timeout=0.0)
        outs = [from_capsule(r._capsule()) for r in results]
        for number, k in written.items():
            if number not in donate:
                tensors[number].copy_(outs[k])
                record.copied_back_bytes += outs[k].numel() * outs[k].element_size()
        return [None if kind == "none" else tensors[i] if kind == "input" else outs[i] for kind, i in plan]

    run._boxed_call = True
    return run


def backend(gm, example_inputs, **kwargs):
    """The torch.compile backend "insitu" (see the module docstring)."""
    from torch._decomp import core_aten_decompositions
    from torch._dynamo.backends.common import aot_autograd

    compiler = aot_autograd(fw_compiler=_compile_graph, bw_compiler=_compile_graph,
                            decompositions=core_aten_decompositions(), keep_inference_input_mutations=True)
    return compiler(gm, example_inputs, **kwargs)


try:
    from torch._dynamo import register_backend as _register_backend
    from torch._dynamo.backends.registry import _BACKENDS as _REGISTERED

    if "insitu" not in _REGISTERED:
        _register_backend(name="insitu")(backend)
except ImportError:  # a torch without dynamo: the entry point still names insitu.torch:backend
    pass
