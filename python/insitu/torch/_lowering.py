"""One FX graph (AOTAutograd's, functionalized and decomposed) as one HLO module."""
from __future__ import annotations

import operator

import torch

from ._kernels import _KERNEL_OPS, _kernel_call_text
from ._types import _DTYPES, Unsupported, _literal, _meta, _shape_text


_VIEW_OPS = {"aten.alias.default", "aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
             "aten.expand.default", "aten.permute.default", "aten.t.default", "aten.transpose.int",
             "aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze.default", "aten.unsqueeze.default",
             "aten.detach.default", "aten.slice.Tensor", "aten.select.int"}


def _view_root(node):
    """The node whose storage `node` views (itself when it is not a view)."""
    while isinstance(node, torch.fx.Node) and node.op == "call_function" and str(node.target) in _VIEW_OPS:
        node = node.args[0]
    return node


class _Lowering:
    """One FX graph as one HLO module (see the module docstring for what each part becomes)."""

    def __init__(self, gm, name):
        self.gm, self.name = gm, name
        self.lines, self.regions, self.region_text = [], {}, []  # regions: (kind, dtype) -> name
        self.types = {}  # HLO value -> (torch dtype, dims)
        self.values = {}  # fx node -> HLO value, or a tuple of them
        self.params = []  # placeholders in order
        self.param_of = {}  # placeholder node -> parameter number
        self.mutations = {}  # parameter number -> HLO value written into it
        self.donors = set()
        # parameter number -> the dimension order in which its tensor is dense (a transposed
        # weight saved for the backward): it is passed as tensor.permute(order), contiguous,
        # and transposed back in the module, where the transpose folds into its readers
        self.layouts = {}
        self.count = 0

    # HLO building blocks
    def emit(self, hint, dtype, dims, text):
        self.count += 1
        name = f"{hint}.{self.count}"
        self.lines.append(f"  {name} = {_shape_text(dtype, dims)} {text}")
        self.types[name] = (dtype, dims)
        return name

    def constant(self, value, dtype, dims=()):
        scalar = self.emit("constant", dtype, (), f"constant({_literal(value, _DTYPES[dtype])})")
        return self.broadcast(scalar, dims)

    def tensor_constant(self, tensor, name):
        """An HLO constant holding `tensor`'s values (nested braces, one level a dimension)."""
        if not isinstance(tensor, torch.Tensor):
            raise Unsupported(f"graph attribute {name} is a {type(tensor).__name__}, not a tensor")
        dims = tuple(tensor.shape)
        type_name = _shape_text(tensor.dtype, dims).split("[")[0]
        from torch._subclasses.fake_tensor import unset_fake_temporarily

        with unset_fake_temporarily():  # AOTAutograd partitions under a fake mode; this tensor is real
            values = tensor.detach().cpu()

        def text(t):
            if t.dim() == 0:
                return _literal(t.item(), type_name)
            return "{" + ", ".join(text(row) for row in t) + "}"

        with unset_fake_temporarily():
                return self.emit("constant", tensor.dtype, dims, f"constant({text(values)})")

    def convert(self, value, dtype):
        if self.types[value][0] == dtype:
            return value
        return self.emit("convert", dtype, self.types[value][1], f"convert({value})")

    def reshape(self, value, dims):
        dtype, old = self.types[value]
        return value if tuple(old) == tuple(dims) else self.emit("reshape", dtype, dims, f"reshape({value})")

    def broadcast(self, value, dims):
        """numpy-style: trailing dimensions line up; size-1 dimensions stretch."""
        dtype, old = self.types[value]
        dims = tuple(dims)
        if tuple(old) == dims:
            return value
        offset = len(dims) - len(old)
        if offset < 0:
            raise Unsupported(f"cannot broadcast {old} to {dims}")
        keep = [i for i, d in enumerate(old) if d == dims[offset + i]]
        if any(d != 1 for i, d in enumerate(old) if i not in keep):
            raise Unsupported(f"cannot broadcast {old} to {dims}")
        value = self.reshape(value, tuple(old[i] for i in keep))
        mapping = ",".join(str(offset + i) for i in keep)
        return self.emit("broadcast", dtype, dims, f"broadcast({value}), dimensions={{{mapping}}}")

    def operand(self, arg, dtype, dims):
        """An FX argument (node or Python number) as an HLO value of `dtype` and `dims`."""
        if isinstance(arg, torch.fx.Node):
            return self.broadcast(self.convert(self.value(arg), dtype), dims)
        if isinstance(arg, (bool, int, float)):
            return self.constant(arg, dtype, dims)
        raise Unsupported(f"operand {arg!r} is neither a tensor nor a number")

    def value(self, node):
        value = self.values[node]
        if isinstance(value, tuple):
            raise Unsupported(f"{node.name} is a tuple where a tensor is needed")
        return value

    def region(self, kind, dtype):
        """A scalar computation (a, b) -> kind(a, b); kind "second" returns b (overwrite)."""
        key = (kind, dtype)
        if key not in self.regions:
            t = _DTYPES[dtype]
            name = f"{kind}_{t}"
            self.regions[key] = name
            root = f"  a = {t}[] parameter(0)\n  ROOT r = {t}[] parameter(1)" if kind == "second" else \
                f"  a = {t}[] parameter(0)\n  b = {t}[] parameter(1)\n  ROOT r = {t}[] {kind}(a, b)"
            self.region_text.append(f"{name} {{\n{root}\n}}\n")
        return self.regions[key]

    def arg_region(self, largest, dtype, index_dtype):
        """(value, index) pairs folded to the largest (or smallest) value, NaN above everything,
        ties to the lower index: torch's max/min over a dimension and argmax/argmin."""
        key = ("argmax" if largest else "argmin", dtype, index_dtype)
        if key not in self.regions:
            t, it = _DTYPES[dtype], _DTYPES[index_dtype]
            name = f"{key[0]}_{t}_{it}"
            self.regions[key] = name
            better = "GT" if largest else "LT"
            self.region_text.append(
                f"{name} {{\n  a = {t}[] parameter(0)\n  ai = {it}[] parameter(1)\n  b = {t}[] parameter(2)\n"
                f"  bi = {it}[] parameter(3)\n  beyond = pred[] compare(b, a), direction={better}\n"
                f"  bnan = pred[] compare(b, b), direction=NE\n  anan = pred[] compare(a, a), direction=NE\n"
                f"  anum = pred[] not(anan)\n  newnan = pred[] and(bnan, anum)\n"
                f"  same = pred[] compare(b, a), direction=EQ\n  bothnan = pred[] and(bnan, anan)\n"
                f"  tie = pred[] or(same, bothnan)\n  lower = pred[] compare(bi, ai), direction=LT\n"
                f"  tielow = pred[] and(tie, lower)\n  first = pred[] or(beyond, newnan)\n"
                f"  take = pred[] or(first, tielow)\n  v = {t}[] select(take, b, a)\n  i = {it}[] select(take, bi, ai)\n"
                f"  ROOT r = ({t}[], {it}[]) tuple(v, i)\n}}\n")
        return self.regions[key]

    def reduce(self, value, axes, kind, init, dtype):
        src_dtype, dims = self.types[value]
        value = self.convert(value, dtype)
        axes = sorted({a % len(dims) for a in axes}) if dims else []
        out = tuple(d for i, d in enumerate(dims) if i not in axes)
        if not axes:
            return value
        start = self.constant(init, dtype)
        return self.emit("reduce", dtype, out, f"reduce({value}, {start}), dimensions={{{','.join(map(str, axes))}}}, "
                                               f"to_apply={self.region(kind, dtype)}")

    def binary(self, op, a, b, dtype, dims, operand_dtype=None):
        operand_dtype = operand_dtype or dtype
        return self.emit(op, dtype, dims, f"{op}({self.operand(a, operand_dtype, dims)}, {self.operand(b, operand_dtype, dims)})")

    # the graph
    def run(self):
        graph = self.gm.graph
        outputs = None
        for node in graph.nodes:
            if node.op == "placeholder":
                dtype, dims = _meta(node)
                number = len(self.params)
                self.params.append(node)
                self.param_of[node] = number
                self.values[node] = self.parameter(node, number, dtype, dims)
            elif node.op == "call_function":
                self.call(node)
            elif node.op == "output":
                outputs = node.args[0]
            elif node.op == "get_attr":  # a tensor the function made (torch.tensor([...])): a literal
                self.values[node] = self.tensor_constant(getattr(self.gm, node.target), node.name)
            else:
                raise Unsupported(f"FX node kind {node.op} ({node.name})")
        return self.finish(outputs)

    def call(self, node):
        target = node.target
        if target is operator.getitem:
            self.values[node] = self.values[node.args[0]][node.args[1]]
            return
        if target is torch.ops.aten.copy_.default and node.args[0] in self.param_of:
            number = self.param_of[node.args[0]]
            dtype, dims = self.types[self.values[node.args[0]]]
            source = self.operand(node.args[1], dtype, dims)
            if source != self.values[node.args[0]]:
                self.mutations[number] = source
            self.values[node] = source
            return
        if target is torch.ops.higher_order.auto_functionalized_v2:
            self.values[node] = self.auto_functionalized(node)
            return
        if target in _KERNEL_OPS:
            self.values[node] = self.kernel(node, list(node.args), _KERNEL_OPS[target])
            return
        handler = _LOWERINGS.get(target) or _LOWERINGS.get(str(target))
        if handler is None and isinstance(target, torch._ops.OpOverload) and "::" in target._schema.name \
                and not target._schema.name.startswith("aten::"):
            named = dict(zip((a.name for a in target._schema.arguments), node.args), **node.kwargs)
            self.values[node] = self.custom_op(target, named, [])[0]  # a functional custom op
            return
        if handler is None:
            raise Unsupported(f"op {target} ({node.format_node()})")
        self.values[node] = handler(self, node, *node.args, **node.kwargs)

    def auto_functionalized(self, node):
        op = node.args[0]
        kwargs = dict(node.kwargs)
        bases = kwargs.pop("_all_bases")
        mutable = {}
        for key in list(kwargs):
            if key.endswith("_base_index"):
                arg = key[1:-len("_base_index")]
                mutable[arg] = bases[kwargs.pop(key)]
        if any(k.startswith("_") for k in kwargs):
            raise Unsupported(f"{op}: a mutated operand that is a view of its base ({sorted(kwargs)})")
        schema = op._schema
        if op is torch.ops.insitu.donate_.default:
            base = bases[0]
            if base not in self.param_of:
                raise Unsupported("insitu.torch.donate of a value that is not a graph input")
            self.donors.add(self.param_of[base])
            return (None,) + tuple(self.values[b] for b in bases)
        if op not in _KERNEL_OPS:
            return self.custom_op(op, {**kwargs, **mutable}, bases)
        args = [mutable[a.name] if a.name in mutable else kwargs.get(a.name, a.default_value) for a in schema.arguments]
        results = self.kernel(node, args, _KERNEL_OPS[op])
        results = results if isinstance(results, tuple) else (results,)
        new_bases = [self.values[b] for b in bases]
        target, mapping, _ = _KERNEL_OPS[op]
        for k, operand in mapping.items():
            arg = args[operand]
            new_bases[bases.index(arg)] = results[k]
        return (None,) + tuple(new_bases)

    def custom_op(self, op, named, bases):
        """A custom op whose implementation only calls make_kernel_from_pallas kernels, run on
        Recorded stand-ins (insitu/torch/_pallas.py): its kernels' HLO in this module. `named`:
        its arguments by schema name; `bases`: the nodes it mutates (auto_functionalized's).
        Returns (its result's HLO value or None, *the bases' new values)."""
        from torch._library import custom_ops

        from ._pallas import Recorded

        opdef = custom_ops.OPDEFS.get(op._schema.name)
        if opdef is None:
            raise Unsupported(f"custom op {op} is neither an insitu kernel (insitu.torch.kernel) nor a torch.library "
                              "custom_op whose implementation insitu can read")
        recorded, args = {}, []
        for a in op._schema.arguments:
            arg = named.get(a.name, a.default_value)
            if isinstance(arg, torch.fx.Node):
                if arg not in recorded:
                    dtype, dims = self.types[self.value(arg)]
                    recorded[arg] = Recorded(self, self.value(arg), dtype, dims)
                arg = recorded[arg]
            args.append(arg)
        before = self.count
        try:
            out = opdef._init_fn(*args)
        except Unsupported:
            raise
        except Exception as error:
            raise Unsupported(f"custom op {op}: its implementation is not only calls of insitu Pallas kernels "
                              f"(make_kernel_from_pallas) on its tensors: {type(error).__name__}: {error}") from error
        if self.count == before:
            raise Unsupported(f"custom op {op} calls no insitu Pallas kernel (make_kernel_from_pallas) and is not an "
                              "insitu kernel (insitu.torch.kernel)")
        if out is not None and not isinstance(out, Recorded):
            raise Unsupported(f"custom op {op}: returns {type(out).__name__}, not one tensor or None")
        new_bases = tuple(recorded[b].value if b in recorded else self.values[b] for b in bases)
        return (None if out is None else out.value,) + new_bases

    def inline_hlo(self, text, operands, results):
        """HLO module `text` (JAX's) as computations of this module, its entry called on
        `operands`; returns one HLO value per entry result (`results`: (torch dtype, dims) each)."""
        import re

        self.count += 1
        prefix = f"inlined{self.count}_"
        lines = text.splitlines()
        header = lines[0]
        names = [m.group(2) for line in lines if (m := re.match(r"^(ENTRY )?%?([\w.\-]+)\s*[({]", line))]
        entry = next(m.group(1) for line in lines if (m := re.match(r"^ENTRY %?([\w.\-]+)", line)))
        pattern = re.compile(r"(?<![\w.\-])(%?)(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
                             + r")(?![\w.\-])")
        body = "\n".join(lines[1:]).replace("ENTRY ", "", 1)
        body = pattern.sub(lambda m: m.group(1) + prefix + m.group(2), body)
        self.region_text.append(body.strip() + "\n")
        shapes = [_shape_text(*r) for r in results]
        tupled = "->(" in header.replace(" ", "")
        name = f"call.{self.count}"
        call_shape = f"({', '.join(shapes)})" if tupled else shapes[0]
        self.lines.append(f"  {name} = {call_shape} call({', '.join(operands)}), to_apply={prefix}{entry}")
        if not tupled:
            self.types[name] = results[0]
            return [name]
        return [self.emit("out", dtype, dims, f"get-tuple-element({name}), index={k}")
                for k, (dtype, dims) in enumerate(results)]

    def kernel(self, node, args, entry):
        target, mapping, mutating = entry
        operands = [self.value(a) for a in args if isinstance(a, torch.fx.Node)]
        if len(operands) != len(args):
            raise Unsupported(f"insitu kernel {target}: every operand must be a tensor")
        shapes = [self.types[v] for v in operands]
        outs = [shapes[mapping[k]] for k in range(len(mapping))]
        self.count += 1
        name = f"kernel.{self.count}"
        self.lines.append(_kernel_call_text(name, target, operands, [_shape_text(*s) for s in shapes], mapping))
        results = []
        for k, (dtype, dims) in enumerate(outs):
            results.append(self.emit("out", dtype, dims, f"get-tuple-element({name}), index={k}"))
        return results[0] if len(results) == 1 and not mutating else tuple(results)

    def parameter(self, node, number, dtype, dims):
        value = node.meta.get("val")
        order = None
        if len(dims) >= 2 and not value.is_contiguous():
            order = sorted(range(len(dims)), key=lambda d: (-value.stride()[d], d))
            if order == list(range(len(dims))) or not value.permute(order).is_contiguous():
                order = None  # not a permutation of a dense layout: insitu copies it row-major
        if order is None:
            return self.emit("param", dtype, dims, f"parameter({number})")
        self.layouts[number] = order
        physical = self.emit("param", dtype, tuple(dims[d] for d in order), f"parameter({number})")
        inverse = [order.index(d) for d in range(len(dims))]
        return self.emit("transpose", dtype, dims, f"transpose({physical}), dimensions={{{','.join(map(str, inverse))}}}")

    def input_view(self, out):
        """(parameter number, [(view op, its other arguments)...]) when `out` is a chain of view
        ops over an input this graph does not write, with constant arguments; else None."""
        if not isinstance(out, torch.fx.Node) or out in self.param_of:
            return None
        chain, node = [], out
        while node not in self.param_of:
            if not (isinstance(node, torch.fx.Node) and node.op == "call_function" and str(node.target) in _VIEW_OPS):
                return None
            rest, found = node.args[1:], []
            torch.fx.node.map_arg((rest, node.kwargs), found.append)
            if found:  # a size computed in the graph
                return None
            chain.append((node.target, rest, dict(node.kwargs)))
            node = node.args[0]
        number = self.param_of[node]
        if number in self.mutations:
            return None
        return number, chain[::-1]

    def finish(self, outputs):
        plan, results, returned = [], [], {}  # returned: (view root, HLO value) -> plan entry
        for out in outputs:
            if out is None:
                plan.append(("none", None))
            elif isinstance(out, torch.fx.Node) and out in self.param_of and out not in self.mutations.values():
                plan.append(("input", self.param_of[out]))
            elif (chain := self.input_view(out)) is not None:
                # a view of an input the graph does not write (a weight's transpose saved for the
                # backward): made in torch from the input, as torch makes it, not computed here
                plan.append(("view", chain))
            elif isinstance(out, torch.fx.Node):
                # A view of an output already returned (alias(relu) beside relu) is that tensor
                # again, as in torch; a clone is not, and gets a buffer (a copy) of its own.
                key = (_view_root(out), self.value(out))
                if key not in returned:
                    results.append(self.value(out))
                    returned[key] = ("result", len(results) - 1)
                plan.append(returned[key])
            else:
                raise Unsupported(f"graph output {out!r} is not a tensor")
        written = {}
        for number, value in sorted(self.mutations.items()):
            if number in self.layouts:  # written back in the layout it was passed in
                order = self.layouts[number]
                dtype, dims = self.types[value]
                value = self.emit("transpose", dtype, tuple(dims[d] for d in order),
                                  f"transpose({value}), dimensions={{{','.join(map(str, order))}}}")
            results.append(value)
            written[number] = len(results) - 1
        shapes = ", ".join(_shape_text(*self.types[v]) for v in results)
        header = f"HloModule {self.name}"
        if written:
            header += ", input_output_alias={ " + ", ".join(
                f"{{{k}}}: ({number}, {{}}, may-alias)" for number, k in written.items()) + " }"
        donors = sorted(self.donors - set(written))
        if donors:
            header += ", buffer_donor={ " + ", ".join(f"({n}, {{}})" for n in donors) + " }"
        body = "\n".join(self.lines)
        text = (header + "\n\n" + "\n".join(self.region_text) + "\nENTRY main {\n" + body
                + f"\n  ROOT result = ({shapes}) tuple({', '.join(results)})\n}}\n")
        return text, plan, written, donors, self.layouts


# --- the ops ------------------------------------------------------------------------------------

aten = torch.ops.aten
_LOWERINGS = {}  # op overload (or its name, for ops registered late) -> lowering


def _lower(*targets):
    def register(fn):
        for target in targets:
            _LOWERINGS[target] = fn
        return fn
    return register

