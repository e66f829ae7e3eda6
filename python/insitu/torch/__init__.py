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

from . import _attention, _ops, _ops_index, _ops_nn, _optim  # noqa: F401  (each registers its lowerings)
from ._kernels import donate, kernel, kernel_call
from ._pallas import make_kernel_from_pallas
from ._lowering import _Lowering
from ._types import Unsupported, write_back

__all__ = ["backend", "kernel", "kernel_call", "donate", "make_kernel_from_pallas", "compiled_graphs", "CompiledGraph",
           "Unsupported"]

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


class _Fallback(Exception):
    """A graph insitu cannot run: the whole function then runs as eager torch runs it."""

    def __init__(self, reason, text=None):
        super().__init__(reason)
        self.text = text  # the lowered HLO where there is one


# HLO text (its module name left out) -> executable, compiled when AOTAutograd partitioned the
# joint graph and taken by _compile_graph; a few at most, since each is taken soon after.
_checked = {}
_CHECKED_KEPT = 8


def _text_key(text):
    """The module text without its name (the header's aliases and donors stay in the key)."""
    header, body = text.split("\n", 1)
    _, _, rest = header.partition(",")
    return rest + "\n" + body


def _lower_and_compile(gm, name):
    """(text, plan, written, donors, layouts, executable), or _Fallback saying why not."""
    text = None
    try:
        text, plan, written, donors, layouts = _Lowering(gm, name).run()
        executable = _checked.pop(_text_key(text), None) or insitu.compile(text)
    except Unsupported as e:
        raise _Fallback(str(e)) from None
    except insitu.Error as e:  # a lowering this package got wrong: still the user's answer, from torch
        raise _Fallback(f"insitu rejected the lowered module: {e}", text) from None
    return text, plan, written, donors, layouts, executable


def _compile_graph(gm, example_inputs):
    name = f"torch_graph_{len(compiled_graphs)}"
    text, plan, written, donors, layouts, executable = _lower_and_compile(gm, name)
    record = CompiledGraph(name, text, executable)
    compiled_graphs.append(record)
    in_place = set(written) | set(donors)

    core = executable._core
    to_capsule, from_capsule = torch._C._to_dlpack, torch._C._from_dlpack  # what torch.{to,from}_dlpack call

    def run(args):
        originals = tensors = [a.detach() if isinstance(a, torch.Tensor) and a.requires_grad else a for a in args]
        args.clear()
        if layouts:  # inputs passed in the order they are dense in (the module transposes them back)
            tensors = list(tensors)
            for number, order in layouts.items():
                tensors[number] = tensors[number].permute(order)
        donate = []
        if in_place:
            pointers = [t.data_ptr() for t in tensors]
            donate = [i for i in in_place if tensors[i].is_contiguous() and pointers.count(pointers[i]) == 1]
        results = core(tuple(to_capsule(t) if isinstance(t, torch.Tensor) else t for t in tensors), donate=donate,
                       threads=insitu.default_threads, timeout=0.0)
        outs = [from_capsule(r._capsule()) for r in results]
        record.copied_back_bytes += write_back(
            (tensors[number], outs[k]) for number, k in written.items() if number not in donate)
        return [None if kind == "none" else originals[i] if kind == "input" else outs[i] if kind == "result"
                else _replay(originals, i) for kind, i in plan]

    run._boxed_call = True
    return run


def _compile_backward(gm, example_inputs):
    """The backward graph, compiled when it first runs (the partition already compiled it, so
    this takes that executable). Should it fail now anyway, the function is past its first call
    and cannot go back to eager whole: the graph runs in torch, decomposed with this backend's
    table (whose rules the gradient tests check), with one warning."""
    from torch._functorch.aot_autograd import make_boxed_func

    try:
        return _compile_graph(gm, example_inputs)
    except _Fallback as e:
        name = f"torch_graph_{len(compiled_graphs)}"
        compiled_graphs.append(CompiledGraph(name, text=e.text, fallback=str(e)))
        warnings.warn(f"insitu: backward graph {name} runs in torch (decomposed): {e}", stacklevel=2)
        return make_boxed_func(gm.forward)


def _replay(tensors, view):
    """A graph output that is a view of an input: the same view ops applied to that input."""
    number, chain = view
    tensor = tensors[number]
    for target, args, kwargs in chain:
        tensor = target(tensor, *args, **kwargs)
    return tensor


def _partition(joint, joint_inputs, **kwargs):
    """AOTAutograd's default partition, then both graphs lowered and compiled now, so that a
    backward insitu cannot run sends the whole function to eager torch before it first runs
    (AOTAutograd compiles the backward only at the first backward call)."""
    from torch._functorch.partitioners import default_partition

    forward, backward = default_partition(joint, joint_inputs, **kwargs)
    for offset, graph in enumerate((forward, backward)):
        text, *_, executable = _lower_and_compile(graph, f"torch_graph_{len(compiled_graphs) + offset}")
        _checked[_text_key(text)] = executable
        while len(_checked) > _CHECKED_KEPT:
            _checked.pop(next(iter(_checked)))
    return forward, backward


# Decompositions the backend does not take from core_aten_decompositions(), each for a reason:
_NOT_DECOMPOSED = {
    # returns the attention matrix where the logsumexp belongs (torch's own comment says Inductor
    # must exclude it), so the backward read it as the logsumexp; _attention lowers it
    "aten._scaled_dot_product_flash_attention_for_cpu.default",
    # a full-size where over the base (a 75 MB cache rewritten for a one-row update through a
    # view); _ops_index lowers it as a dynamic-update-slice in the base's buffer
    "aten.select_scatter.default",
}


def _decompositions():
    """core_aten_decompositions() less _NOT_DECOMPOSED: every rule left is one whose results the
    tests check against eager (python/tests/test_torch_gradients.py)."""
    from torch._decomp import core_aten_decompositions

    return {op: rule for op, rule in core_aten_decompositions().items() if str(op) not in _NOT_DECOMPOSED}


def backend(gm, example_inputs, **kwargs):
    """The torch.compile backend "insitu" (see the module docstring). A function with a graph insitu
    cannot run runs whole as eager torch runs it (gm.forward: no decomposition applied), with
    one warning saying why."""
    from torch._dynamo.backends.common import aot_autograd

    compiler = aot_autograd(fw_compiler=_compile_graph, bw_compiler=_compile_backward, partition_fn=_partition,
                            decompositions=_decompositions(), keep_inference_input_mutations=True)
    try:
        return compiler(gm, example_inputs, **kwargs)
    except _Fallback as e:
        name = f"torch_graph_{len(compiled_graphs)}"
        compiled_graphs.append(CompiledGraph(name, text=e.text, fallback=str(e)))
        warnings.warn(f"insitu: graph {name} runs eagerly in torch: {e}", stacklevel=2)
        return gm.forward


def _share_torch_openmp():
    """insitu's parallel loops on torch's own OpenMP runtime (bench/README.md: torch's workers spin
    after each region and a second pool shares the cores with them). INSITU_HOST_OPENMP=0 keeps
    insitu's own workers."""
    import os
    import pathlib

    if os.environ.get("INSITU_HOST_OPENMP", "1") == "0":
        return False
    # torch's own copy, or (by its soname) the one the process loaded first, which torch then
    # shares: insitu's oneDNN links libgomp.so.1 too
    candidates = [str(p) for p in sorted((pathlib.Path(torch.__file__).parent / "lib").glob("libgomp*.so*"))]
    return any(insitu._insitu._use_host_openmp(library) for library in candidates + ["libgomp.so.1"])


sharing_torch_openmp = _share_torch_openmp()

try:
    from torch._dynamo import register_backend as _register_backend
    from torch._dynamo.backends.registry import _BACKENDS as _REGISTERED

    if "insitu" not in _REGISTERED:
        _register_backend(name="insitu")(backend)
except ImportError:  # a torch without dynamo: the entry point still names insitu.torch:backend
    pass
