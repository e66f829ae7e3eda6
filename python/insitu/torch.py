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

import math
import operator
import warnings

import torch

import insitu

__all__ = ["backend", "kernel", "kernel_call", "donate", "compiled_graphs", "CompiledGraph"]

#: Every graph the backend compiled, in order (forward and backward graphs separately).
compiled_graphs: list = []

_DTYPES = {
    torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.int8: "s8", torch.int16: "s16", torch.int32: "s32", torch.int64: "s64", torch.uint8: "u8",
    torch.bool: "pred", torch.complex64: "c64", torch.complex128: "c128",
}


class Unsupported(Exception):
    """A graph this module cannot lower; the message names the op and why."""


# --- insitu kernels as torch custom ops ------------------------------------------------------

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
    for k, i in enumerate(writes):
        if i not in donate:
            tensors[i].copy_(torch.from_dlpack(results[k]))


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


# --- FX graph -> HLO text ---------------------------------------------------------------------

def _shape_text(dtype, dims):
    if dtype not in _DTYPES:
        raise Unsupported(f"element type {dtype} has no insitu type")
    return f"{_DTYPES[dtype]}[{','.join(str(d) for d in dims)}]"


def _literal(value, type_name):
    if type_name == "pred":
        return "true" if value else "false"
    if type_name[0] in "su":
        return str(int(value))
    value = float(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def _meta(node):
    value = node.meta.get("val") if hasattr(node, "meta") else None
    if not isinstance(value, torch.Tensor):
        raise Unsupported(f"{node.name} is not a tensor of static shape ({type(value).__name__}: {value}); "
                          "torch.compile(..., dynamic=False) keeps shapes static")
    try:
        dims = tuple(int(d) for d in value.shape)
    except TypeError:
        raise Unsupported(f"{node.name} has a dynamic shape {tuple(value.shape)}") from None
    return value.dtype, dims


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
                self.values[node] = self.emit("param", dtype, dims, f"parameter({number})")
            elif node.op == "call_function":
                self.call(node)
            elif node.op == "output":
                outputs = node.args[0]
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
            raise Unsupported(f"custom op {op} is not an insitu kernel (insitu.torch.kernel)")
        args = [mutable[a.name] if a.name in mutable else kwargs.get(a.name, a.default_value) for a in schema.arguments]
        results = self.kernel(node, args, _KERNEL_OPS[op])
        results = results if isinstance(results, tuple) else (results,)
        new_bases = [self.values[b] for b in bases]
        target, mapping, _ = _KERNEL_OPS[op]
        for k, operand in mapping.items():
            arg = args[operand]
            new_bases[bases.index(arg)] = results[k]
        return (None,) + tuple(new_bases)

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

    def finish(self, outputs):
        plan, results, returned = [], [], {}  # returned: (view root, HLO value) -> plan entry
        for out in outputs:
            if out is None:
                plan.append(("none", None))
            elif isinstance(out, torch.fx.Node) and out in self.param_of and out not in self.mutations.values():
                plan.append(("input", self.param_of[out]))
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
        return text, plan, written, donors


# --- the ops ------------------------------------------------------------------------------------

aten = torch.ops.aten
_LOWERINGS = {}  # op overload (or its name, for ops registered late) -> lowering


def _lower(*targets):
    def register(fn):
        for target in targets:
            _LOWERINGS[target] = fn
        return fn
    return register


def _result_type(*args):
    tensors = [a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in args]
    return torch.result_type(*tensors) if len(tensors) == 2 else tensors[0].dtype


def _binary(op):
    def lower(L, node, a, b, *, alpha=None, **_):
        dtype, dims = _meta(node)
        if alpha is not None and alpha != 1:
            b_value = L.binary("multiply", b, alpha, dtype, dims)
            return L.emit(op, dtype, dims, f"{op}({L.operand(a, dtype, dims)}, {b_value})")
        return L.binary(op, a, b, dtype, dims)
    return lower


for _target, _op in [(aten.add.Tensor, "add"), (aten.add.Scalar, "add"), (aten.sub.Tensor, "subtract"),
                     (aten.sub.Scalar, "subtract"), (aten.mul.Tensor, "multiply"), (aten.mul.Scalar, "multiply"),
                     (aten.maximum.default, "maximum"), (aten.minimum.default, "minimum"),
                     (aten.pow.Tensor_Tensor, "power"), (aten.atan2.default, "atan2"),
                     (aten.logical_and.default, "and"), (aten.logical_or.default, "or"),
                     (aten.bitwise_and.Tensor, "and"), (aten.bitwise_or.Tensor, "or"), (aten.bitwise_xor.Tensor, "xor")]:
    _lower(_target)(_binary(_op))


@_lower(aten.div.Tensor, aten.div.Scalar)
def _div(L, node, a, b):
    dtype, dims = _meta(node)
    return L.binary("divide", a, b, dtype, dims)


@_lower(aten.div.Tensor_mode)
def _div_mode(L, node, a, b, *, rounding_mode=None):
    dtype, dims = _meta(node)
    quotient = L.binary("divide", a, b, dtype, dims)
    if rounding_mode is None or (rounding_mode == "trunc" and not dtype.is_floating_point):
        return quotient
    if rounding_mode == "floor" and dtype.is_floating_point:
        return L.emit("floor", dtype, dims, f"floor({quotient})")
    raise Unsupported(f"div with rounding_mode={rounding_mode!r} on {dtype}")


def _compare(direction):
    def lower(L, node, a, b):
        _, dims = _meta(node)
        common = _result_type(a, b)
        return L.emit("compare", torch.bool, dims, f"compare({L.operand(a, common, dims)}, {L.operand(b, common, dims)}), "
                                                   f"direction={direction}")
    return lower


for _name, _direction in [("eq", "EQ"), ("ne", "NE"), ("lt", "LT"), ("le", "LE"), ("gt", "GT"), ("ge", "GE")]:
    _lower(getattr(aten, _name).Tensor, getattr(aten, _name).Scalar)(_compare(_direction))


def _unary(op):
    def lower(L, node, x):
        dtype, dims = _meta(node)
        return L.emit(op, dtype, dims, f"{op}({L.operand(x, dtype, dims)})")
    return lower


for _target, _op in [(aten.neg.default, "negate"), (aten.exp.default, "exponential"), (aten.log.default, "log"),
                     (aten.tanh.default, "tanh"), (aten.sqrt.default, "sqrt"), (aten.rsqrt.default, "rsqrt"),
                     (aten.abs.default, "abs"), (aten.sigmoid.default, "logistic"), (aten.erf.default, "erf"),
                     (aten.sin.default, "sine"), (aten.cos.default, "cosine"), (aten.log1p.default, "log-plus-one"),
                     (aten.expm1.default, "exponential-minus-one"), (aten.sign.default, "sign"),
                     (aten.floor.default, "floor"), (aten.ceil.default, "ceil"), (aten.logical_not.default, "not"),
                     (aten.bitwise_not.default, "not")]:
    _lower(_target)(_unary(_op))


@_lower(aten.reciprocal.default)
def _reciprocal(L, node, x):
    dtype, dims = _meta(node)
    return L.binary("divide", 1.0, x, dtype, dims)


@_lower(aten.relu.default)
def _relu(L, node, x):
    dtype, dims = _meta(node)
    return L.binary("maximum", x, 0, dtype, dims)


@_lower(aten.pow.Tensor_Scalar)
def _pow_scalar(L, node, x, exponent):
    dtype, dims = _meta(node)
    if exponent == 1:
        return L.operand(x, dtype, dims)
    if exponent == 2:
        value = L.operand(x, dtype, dims)
        return L.emit("multiply", dtype, dims, f"multiply({value}, {value})")
    if exponent == 0.5 and dtype.is_floating_point:
        return L.emit("sqrt", dtype, dims, f"sqrt({L.operand(x, dtype, dims)})")
    return L.binary("power", x, exponent, dtype, dims)


@_lower(aten.pow.Scalar)
def _pow_base(L, node, base, x):
    dtype, dims = _meta(node)
    return L.binary("power", base, x, dtype, dims)


@_lower("prims.fma.default")  # registered by inductor, which AdamW's decomposition brings in
def _fma(L, node, a, b, c):
    dtype, dims = _meta(node)
    product = L.binary("multiply", a, b, dtype, dims)
    return L.emit("add", dtype, dims, f"add({product}, {L.operand(c, dtype, dims)})")


@_lower(aten.clamp.default)
def _clamp(L, node, x, min=None, max=None):
    dtype, dims = _meta(node)
    value = L.operand(x, dtype, dims)
    if min is not None:
        value = L.emit("maximum", dtype, dims, f"maximum({value}, {L.operand(min, dtype, dims)})")
    if max is not None:
        value = L.emit("minimum", dtype, dims, f"minimum({value}, {L.operand(max, dtype, dims)})")
    return value


@_lower(aten.where.self)
def _where(L, node, condition, a, b):
    dtype, dims = _meta(node)
    return L.emit("select", dtype, dims, f"select({L.operand(condition, torch.bool, dims)}, "
                                         f"{L.operand(a, dtype, dims)}, {L.operand(b, dtype, dims)})")


@_lower(aten.gelu.default)
def _gelu(L, node, x, approximate="none"):
    dtype, dims = _meta(node)
    x = L.operand(x, dtype, dims)
    if approximate == "tanh":
        square = L.emit("multiply", dtype, dims, f"multiply({x}, {x})")
        cube = L.emit("multiply", dtype, dims, f"multiply({square}, {x})")
        term = L.emit("multiply", dtype, dims, f"multiply({cube}, {L.constant(0.044715, dtype, dims)})")
        inner = L.emit("add", dtype, dims, f"add({x}, {term})")
        scaled = L.emit("multiply", dtype, dims, f"multiply({inner}, {L.constant(math.sqrt(2 / math.pi), dtype, dims)})")
        core = L.emit("tanh", dtype, dims, f"tanh({scaled})")
    else:
        scaled = L.emit("multiply", dtype, dims, f"multiply({x}, {L.constant(math.sqrt(0.5), dtype, dims)})")
        core = L.emit("erf", dtype, dims, f"erf({scaled})")
    one_plus = L.emit("add", dtype, dims, f"add({core}, {L.constant(1.0, dtype, dims)})")
    half_x = L.emit("multiply", dtype, dims, f"multiply({x}, {L.constant(0.5, dtype, dims)})")
    return L.emit("multiply", dtype, dims, f"multiply({half_x}, {one_plus})")


@_lower(aten.clone.default, aten.alias.default, aten.detach.default, aten.lift_fresh_copy.default,
        aten._to_copy.default, aten.copy.default, aten.view.default, aten._unsafe_view.default,
        aten.reshape.default, aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default,
        aten.expand.default, aten.view_copy.default)
def _same_elements(L, node, x, *rest, **kwargs):
    """Ops whose result is the operand's elements in row-major order, maybe converted (clone,
    alias, _to_copy, views) or broadcast (expand; copy(self, src) takes src)."""
    dtype, dims = _meta(node)
    if node.target is aten.copy.default:
        x = rest[0]
    value = L.convert(L.value(x), dtype)
    if node.target is aten.expand.default or node.target is aten.copy.default:
        return L.broadcast(value, dims)
    return L.reshape(value, dims)


@_lower(aten.permute.default, aten.t.default, aten.transpose.int)
def _permute(L, node, x, *dims_args):
    dtype, dims = _meta(node)
    rank = len(dims)
    if node.target is aten.permute.default:
        order = [d % rank for d in dims_args[0]]
    else:
        a, b = (dims_args + (0, 1))[:2] if node.target is aten.transpose.int else (0, 1)
        order = list(range(rank))
        if rank >= 2:
            order[a % rank], order[b % rank] = order[b % rank], order[a % rank]
    return L.emit("transpose", dtype, dims, f"transpose({L.value(x)}), dimensions={{{','.join(map(str, order))}}}")


@_lower(aten.full.default, aten.scalar_tensor.default)
def _full(L, node, *args, **_):
    dtype, dims = _meta(node)
    value = args[1] if node.target is aten.full.default else args[0]
    return L.constant(value, dtype, dims)


@_lower(aten.full_like.default, aten.zeros_like.default, aten.ones_like.default)
def _full_like(L, node, x, *args, **_):
    dtype, dims = _meta(node)
    value = {aten.zeros_like.default: 0, aten.ones_like.default: 1}.get(node.target, args[0] if args else 0)
    return L.constant(value, dtype, dims)


@_lower(aten.arange.start_step, aten.arange.default, aten.arange.start)
def _arange(L, node, *args, **_):
    dtype, dims = _meta(node)
    numbers = [a for a in args if isinstance(a, (int, float))]
    start, step = (numbers[0], numbers[2] if len(numbers) > 2 else 1) if len(numbers) >= 2 else (0, 1)
    iota = L.emit("iota", dtype, dims, "iota(), iota_dimension=0")
    if step != 1:
        iota = L.emit("multiply", dtype, dims, f"multiply({iota}, {L.constant(step, dtype, dims)})")
    if start != 0:
        iota = L.emit("add", dtype, dims, f"add({iota}, {L.constant(start, dtype, dims)})")
    return iota


def _dot(L, node, a, b, batch):
    dtype, dims = _meta(node)
    a_value, b_value = L.convert(L.value(a), dtype), L.convert(L.value(b), dtype)
    rank = len(L.types[a_value][1])
    attrs = f"lhs_contracting_dims={{{rank - 1}}}, rhs_contracting_dims={{{rank - 2}}}"
    if batch:
        attrs = "lhs_batch_dims={0}, rhs_batch_dims={0}, " + attrs
    return L.emit("dot", dtype, dims, f"dot({a_value}, {b_value}), {attrs}")


@_lower(aten.mm.default)
def _mm(L, node, a, b):
    return _dot(L, node, a, b, batch=False)


@_lower(aten.bmm.default)
def _bmm(L, node, a, b):
    return _dot(L, node, a, b, batch=True)


@_lower(aten.addmm.default)
def _addmm(L, node, bias, a, b, *, beta=1, alpha=1):
    dtype, dims = _meta(node)
    product = _dot(L, node, a, b, batch=False)
    if alpha != 1:
        product = L.emit("multiply", dtype, dims, f"multiply({product}, {L.constant(alpha, dtype, dims)})")
    if beta == 0:
        return product
    bias_value = L.operand(bias, dtype, dims)
    if beta != 1:
        bias_value = L.emit("multiply", dtype, dims, f"multiply({bias_value}, {L.constant(beta, dtype, dims)})")
    return L.emit("add", dtype, dims, f"add({product}, {bias_value})")


def _axes(dims_arg, rank):
    if dims_arg is None or (isinstance(dims_arg, (list, tuple)) and len(dims_arg) == 0):
        return list(range(rank))
    if isinstance(dims_arg, int):
        return [dims_arg % rank]
    return [d % rank for d in dims_arg]


@_lower(aten.sum.dim_IntList, aten.sum.default, aten.mean.dim, aten.mean.default, aten.amax.default,
        aten.amin.default)
def _reduction(L, node, x, dims_arg=None, keepdim=False, **kwargs):
    dtype, dims = _meta(node)
    value = L.value(x)
    rank = len(L.types[value][1])
    axes = _axes(dims_arg, rank) if rank else []
    if node.target in (aten.amax.default, aten.amin.default):
        kind = "maximum" if node.target is aten.amax.default else "minimum"
        init = (-math.inf if kind == "maximum" else math.inf) if dtype.is_floating_point else \
            (torch.iinfo(dtype).min if kind == "maximum" else torch.iinfo(dtype).max)
        reduced = L.reduce(value, axes, kind, init, dtype)
    else:
        reduced = L.reduce(value, axes, "add", 0, dtype)
        if node.target in (aten.mean.dim, aten.mean.default):
            count = math.prod(L.types[value][1][a] for a in axes)
            out_dims = L.types[reduced][1]
            reduced = L.emit("divide", dtype, out_dims, f"divide({reduced}, {L.constant(count, dtype, out_dims)})")
    return L.reshape(reduced, dims)


@_lower(aten.any.dim, aten.any.dims, aten.any.default, aten.all.dim, aten.all.dims, aten.all.default)
def _any_all(L, node, x, dims_arg=None, keepdim=False):
    _, dims = _meta(node)
    value = L.convert(L.value(x), torch.bool)
    rank = len(L.types[value][1])
    is_any = "any" in str(node.target)
    reduced = L.reduce(value, _axes(dims_arg, rank) if rank else [], "or" if is_any else "and", not is_any, torch.bool)
    return L.reshape(reduced, dims)


@_lower(aten.var.correction, aten.var.dim)
def _var(L, node, x, dims_arg=None, *args, correction=None, keepdim=False, unbiased=None):
    dtype, dims = _meta(node)
    if node.target is aten.var.dim:  # var.dim(x, dim, unbiased=True, keepdim=False)
        unbiased = args[0] if args else (True if unbiased is None else unbiased)
        keepdim = args[1] if len(args) > 1 else keepdim
        correction = 1 if unbiased else 0
    elif args:  # var.correction(x, dim, *, correction, keepdim) written positionally
        keepdim = args[-1] if isinstance(args[-1], bool) else keepdim
    correction = 1 if correction is None else correction
    value = L.convert(L.value(x), dtype)
    full = L.types[value][1]
    axes = _axes(dims_arg, len(full))
    count = math.prod(full[a] for a in axes)
    kept = tuple(1 if i in axes else d for i, d in enumerate(full))
    reduced_dims = tuple(d for i, d in enumerate(full) if i not in axes)
    mean = L.emit("divide", dtype, reduced_dims, f"divide({L.reduce(value, axes, 'add', 0, dtype)}, "
                                                 f"{L.constant(count, dtype, reduced_dims)})")
    centered = L.emit("subtract", dtype, full, f"subtract({value}, {L.broadcast(L.reshape(mean, kept), full)})")
    square = L.emit("multiply", dtype, full, f"multiply({centered}, {centered})")
    total = L.reduce(square, axes, "add", 0, dtype)
    var = L.emit("divide", dtype, reduced_dims, f"divide({total}, {L.constant(max(count - correction, 0), dtype, reduced_dims)})")
    return L.reshape(var, dims)


@_lower(aten.max.dim, aten.min.dim, aten.argmax.default, aten.argmin.default)
def _arg_reduce(L, node, x, dim=None, keepdim=False):
    largest = node.target in (aten.max.dim, aten.argmax.default)
    value = L.value(x)
    dtype, full = L.types[value]
    if dim is None:  # argmax over everything: of the flattened array
        value = L.reshape(value, (math.prod(full),))
        full, dim = (math.prod(full),), 0
    axis = dim % len(full)
    index_dtype = torch.int64
    reduced = tuple(d for i, d in enumerate(full) if i != axis)
    iota = L.emit("iota", index_dtype, full, f"iota(), iota_dimension={axis}")
    extreme = -math.inf if largest else math.inf
    if not dtype.is_floating_point:
        extreme = torch.iinfo(dtype).min if largest else torch.iinfo(dtype).max
    start, zero = L.constant(extreme, dtype), L.constant(0, index_dtype)
    both = f"reduce_pair.{L.count + 1}"
    L.count += 1
    L.lines.append(f"  {both} = ({_shape_text(dtype, reduced)}, {_shape_text(index_dtype, reduced)}) "
                   f"reduce({value}, {iota}, {start}, {zero}), dimensions={{{axis}}}, "
                   f"to_apply={L.arg_region(largest, dtype, index_dtype)}")
    values = L.emit("values", dtype, reduced, f"get-tuple-element({both}), index=0")
    indices = L.emit("indices", index_dtype, reduced, f"get-tuple-element({both}), index=1")
    if node.target in (aten.argmax.default, aten.argmin.default):
        _, dims = _meta(node)
        return L.reshape(indices, dims)
    out = node.meta["val"]
    dims = tuple(int(d) for d in out[0].shape)
    return (L.reshape(values, dims), L.reshape(indices, dims))


@_lower(aten.cumsum.default)
def _cumsum(L, node, x, dim, *, dtype=None):
    out_dtype, dims = _meta(node)
    value = L.convert(L.value(x), out_dtype)
    axis = dim % len(dims) if dims else 0
    if not dims:
        return value
    sizes = "x".join(str(dims[axis]) if i == axis else "1" for i in range(len(dims)))
    pads = "x".join(f"{dims[axis] - 1}_0" if i == axis else "0_0" for i in range(len(dims)))
    return L.emit("cumsum", out_dtype, dims, f"reduce-window({value}, {L.constant(0, out_dtype)}), "
                                             f"window={{size={sizes} pad={pads}}}, to_apply={L.region('add', out_dtype)}")


@_lower(aten.convolution.default)
def _convolution(L, node, x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """N-d convolution, NC<spatial> x OI<spatial> (torch's layouts) as one HLO convolution;
    the bias added after it. Transposed convolutions are not lowered yet."""
    if transposed:
        raise Unsupported("a transposed convolution (conv_transpose) is not lowered yet")
    dtype, dims = _meta(node)
    spatial = len(dims) - 2
    lhs, rhs = L.convert(L.value(x), dtype), L.convert(L.value(weight), dtype)
    kernel = L.types[rhs][1][2:]
    sizes = "x".join(str(k) for k in kernel)
    window = f"size={sizes} stride={'x'.join(str(s) for s in stride)} " \
             f"pad={'x'.join(f'{p}_{p}' for p in padding)} rhs_dilate={'x'.join(str(d) for d in dilation)}"
    letters = "".join(str(i) for i in range(spatial))
    labels = f"bf{letters}_oi{letters}->bf{letters}"
    out = L.emit("convolution", dtype, dims, f"convolution({lhs}, {rhs}), window={{{window}}}, dim_labels={labels}, "
                                             f"feature_group_count={groups}")
    if bias is None:
        return out
    b = L.convert(L.value(bias), dtype)  # [C_out] along dimension 1
    b = L.emit("broadcast", dtype, dims, f"broadcast({b}), dimensions={{1}}")
    return L.emit("add", dtype, dims, f"add({out}, {b})")


@_lower(aten._native_batch_norm_legit_no_training.default)
def _batch_norm_inference(L, node, x, weight, bias, running_mean, running_var, momentum, eps):
    """Batch norm with running statistics (eval mode): (x - mean) * rsqrt(var + eps) * weight +
    bias along dimension 1; the two saved statistics torch returns are empty in this mode."""
    out_meta = node.meta["val"]
    dtype, dims = out_meta[0].dtype, tuple(int(d) for d in out_meta[0].shape)
    value = L.operand(x, dtype, dims)

    def per_channel(arg):
        return L.emit("broadcast", dtype, dims, f"broadcast({L.convert(L.value(arg), dtype)}), dimensions={{1}}")

    channels = (dims[1],)
    var = L.convert(L.value(running_var), dtype)
    rstd = L.emit("rsqrt", dtype, channels,
                  f"rsqrt({L.emit('add', dtype, channels, f'add({var}, {L.constant(eps, dtype, channels)})')})")
    rstd = L.emit("broadcast", dtype, dims, f"broadcast({rstd}), dimensions={{1}}")
    out = L.emit("subtract", dtype, dims, f"subtract({value}, {per_channel(running_mean)})")
    out = L.emit("multiply", dtype, dims, f"multiply({out}, {rstd})")
    if weight is not None:
        out = L.emit("multiply", dtype, dims, f"multiply({out}, {per_channel(weight)})")
    if bias is not None:
        out = L.emit("add", dtype, dims, f"add({out}, {per_channel(bias)})")
    empties = [L.constant(0, t.dtype, tuple(int(d) for d in t.shape)) for t in out_meta[1:]]
    return (out, *empties)


def _softmax_parts(L, x, dim, dtype):
    value = L.convert(L.value(x), dtype)
    dims = L.types[value][1]
    axis = dim % len(dims)
    kept = tuple(1 if i == axis else d for i, d in enumerate(dims))
    top = L.reshape(L.reduce(value, [axis], "maximum", -math.inf, dtype), kept)
    shifted = L.emit("subtract", dtype, dims, f"subtract({value}, {L.broadcast(top, dims)})")
    exp = L.emit("exponential", dtype, dims, f"exponential({shifted})")
    total = L.reshape(L.reduce(exp, [axis], "add", 0, dtype), kept)
    return dims, shifted, exp, L.broadcast(total, dims)


@_lower(aten._softmax.default)
def _softmax(L, node, x, dim, half_to_float):
    dtype, dims = _meta(node)
    dims, _, exp, total = _softmax_parts(L, x, dim, dtype)
    return L.emit("divide", dtype, dims, f"divide({exp}, {total})")


@_lower(aten._log_softmax.default)
def _log_softmax(L, node, x, dim, half_to_float):
    dtype, dims = _meta(node)
    dims, shifted, _, total = _softmax_parts(L, x, dim, dtype)
    return L.emit("subtract", dtype, dims, f"subtract({shifted}, {L.emit('log', dtype, dims, f'log({total})')})")


@_lower(aten._softmax_backward_data.default)
def _softmax_backward(L, node, grad, output, dim, input_dtype):
    dtype, dims = _meta(node)
    g, y = L.operand(grad, dtype, dims), L.operand(output, dtype, dims)
    gy = L.emit("multiply", dtype, dims, f"multiply({g}, {y})")
    axis = dim % len(dims)
    kept = tuple(1 if i == axis else d for i, d in enumerate(dims))
    total = L.broadcast(L.reshape(L.reduce(gy, [axis], "add", 0, dtype), kept), dims)
    return L.emit("subtract", dtype, dims, f"subtract({gy}, {L.emit('multiply', dtype, dims, f'multiply({y}, {total})')})")


@_lower(aten.native_layer_norm.default)
def _layer_norm(L, node, x, normalized_shape, weight, bias, eps):
    out_meta = node.meta["val"]
    dtype, dims = out_meta[0].dtype, tuple(int(d) for d in out_meta[0].shape)
    stat_dims = tuple(int(d) for d in out_meta[1].shape)
    value = L.operand(x, dtype, dims)
    axes = list(range(len(dims) - len(normalized_shape), len(dims)))
    count = math.prod(dims[a] for a in axes)
    mean = L.reshape(L.emit("divide", dtype, tuple(d for i, d in enumerate(dims) if i not in axes),
                            f"divide({L.reduce(value, axes, 'add', 0, dtype)}, "
                            f"{L.constant(count, dtype, tuple(d for i, d in enumerate(dims) if i not in axes))})"),
                     stat_dims)
    centered = L.emit("subtract", dtype, dims, f"subtract({value}, {L.broadcast(mean, dims)})")
    square = L.emit("multiply", dtype, dims, f"multiply({centered}, {centered})")
    reduced_dims = tuple(d for i, d in enumerate(dims) if i not in axes)
    variance = L.emit("divide", dtype, reduced_dims,
                      f"divide({L.reduce(square, axes, 'add', 0, dtype)}, {L.constant(count, dtype, reduced_dims)})")
    rstd = L.reshape(L.emit("rsqrt", dtype, reduced_dims,
                            f"rsqrt({L.emit('add', dtype, reduced_dims, f'add({variance}, {L.constant(eps, dtype, reduced_dims)})')})"),
                     stat_dims)
    out = L.emit("multiply", dtype, dims, f"multiply({centered}, {L.broadcast(rstd, dims)})")
    if weight is not None:
        out = L.emit("multiply", dtype, dims, f"multiply({out}, {L.operand(weight, dtype, dims)})")
    if bias is not None:
        out = L.emit("add", dtype, dims, f"add({out}, {L.operand(bias, dtype, dims)})")
    return (out, mean, rstd)


@_lower(aten.split_with_sizes.default, aten.split.Tensor)
def _split(L, node, x, sizes, dim=0):
    value = L.value(x)
    dtype, dims = L.types[value]
    axis = dim % len(dims)
    if isinstance(sizes, int):
        sizes = [min(sizes, dims[axis] - s) for s in range(0, dims[axis], sizes)]
    pieces, start = [], 0
    for size in sizes:
        out = tuple(size if i == axis else d for i, d in enumerate(dims))
        bounds = ",".join(f"[{start}:{start + size}]" if i == axis else f"[0:{d}]" for i, d in enumerate(dims))
        pieces.append(L.emit("slice", dtype, out, f"slice({value}), slice={{{bounds}}}"))
        start += size
    return tuple(pieces)


@_lower(aten.slice.Tensor)
def _slice(L, node, x, dim=0, start=None, end=None, step=1):
    dtype, dims = _meta(node)
    value = L.value(x)
    old = L.types[value][1]
    axis = dim % len(old)
    size = old[axis]
    start = 0 if start is None else (start + size if start < 0 else min(start, size))
    end = size if end is None else (end + size if end < 0 else min(end, size))
    bounds = ",".join(f"[{start}:{end}:{step}]" if i == axis else f"[0:{d}]" for i, d in enumerate(old))
    return L.emit("slice", dtype, dims, f"slice({value}), slice={{{bounds}}}")


@_lower(aten.select.int)
def _select(L, node, x, dim, index):
    dtype, dims = _meta(node)
    value = L.value(x)
    old = L.types[value][1]
    axis = dim % len(old)
    index = index % old[axis]
    kept = tuple(1 if i == axis else d for i, d in enumerate(old))
    bounds = ",".join(f"[{index}:{index + 1}]" if i == axis else f"[0:{d}]" for i, d in enumerate(old))
    return L.reshape(L.emit("slice", dtype, kept, f"slice({value}), slice={{{bounds}}}"), dims)


@_lower(aten.cat.default)
def _cat(L, node, tensors, dim=0):
    dtype, dims = _meta(node)
    parts = [L.convert(L.value(t), dtype) for t in tensors]
    parts = [p for p in parts if L.types[p][1] != (0,)]  # torch lets an empty 1-D tensor join anything
    return L.emit("concatenate", dtype, dims, f"concatenate({', '.join(parts)}), dimensions={{{dim % len(dims)}}}")


@_lower(aten.index_put.default)
def _index_put(L, node, x, indices, values, accumulate=False):
    """x[..., index, ...] = values (or +=) with one integer index tensor, of any rank, at one
    dimension: a scatter whose batch dimensions are the index's."""
    dtype, dims = _meta(node)
    tensors = [(d, i) for d, i in enumerate(indices) if i is not None]
    if len(tensors) != 1:
        raise Unsupported(f"index_put with {len(tensors)} index tensors: one is lowered")
    axis, index_node = tensors[0]
    index = L.value(index_node)
    index_dtype, index_dims = L.types[index]
    if index_dtype == torch.bool:
        raise Unsupported("index_put with a boolean mask")
    # torch wraps negative indices; a scatter would skip them.
    negative = L.emit("compare", torch.bool, index_dims,
                      f"compare({index}, {L.constant(0, index_dtype, index_dims)}), direction=LT")
    wrapped = L.emit("add", index_dtype, index_dims, f"add({index}, {L.constant(dims[axis], index_dtype, index_dims)})")
    index = L.emit("select", index_dtype, index_dims, f"select({negative}, {wrapped}, {index})")
    index = L.reshape(index, index_dims + (1,))
    rank = len(index_dims)
    update_dims = dims[:axis] + index_dims + dims[axis + 1:]
    updates = L.operand(values, dtype, update_dims)
    windows = ",".join(str(d) for d in list(range(axis)) + list(range(axis + rank, len(update_dims))))
    combine = L.region("add" if accumulate else "second", dtype)
    return L.emit("scatter", dtype, dims,
                  f"scatter({L.operand(x, dtype, dims)}, {index}, {updates}), update_window_dims={{{windows}}}, "
                  f"inserted_window_dims={{{axis}}}, scatter_dims_to_operand_dims={{{axis}}}, "
                  f"index_vector_dim={rank}, to_apply={combine}")


def _full_indices(L, index, dim, rank):
    """For torch.gather/scatter along `dim`: [*index.shape, rank] coordinates, the index's own
    values at `dim` and each element's position elsewhere."""
    index_dtype, dims = L.types[index]
    parts = []
    for d in range(rank):
        if d == dim:
            part = index
        else:
            part = L.emit("iota", index_dtype, dims, f"iota(), iota_dimension={d}")
        parts.append(L.reshape(part, dims + (1,)))
    return L.emit("concatenate", index_dtype, dims + (rank,), f"concatenate({', '.join(parts)}), dimensions={{{len(dims)}}}")


@_lower(aten.gather.default)
def _gather(L, node, x, dim, index, sparse_grad=False):
    dtype, dims = _meta(node)
    value = L.value(x)
    rank = len(L.types[value][1])
    if rank == 0:
        raise Unsupported("gather of a scalar")
    indices = _full_indices(L, L.value(index), dim % rank, rank)
    every = ",".join(map(str, range(rank)))
    return L.emit("gather", dtype, dims,
                  f"gather({value}, {indices}), offset_dims={{}}, collapsed_slice_dims={{{every}}}, "
                  f"start_index_map={{{every}}}, index_vector_dim={rank}, slice_sizes={{{','.join(['1'] * rank)}}}")


@_lower(aten.scatter.value, aten.scatter.src, aten.scatter_add.default)
def _scatter(L, node, x, dim, index, source):
    dtype, dims = _meta(node)
    rank = len(dims)
    if rank == 0:
        raise Unsupported("scatter into a scalar")
    index_value = L.value(index)
    index_dims = L.types[index_value][1]
    if isinstance(source, torch.fx.Node):
        updates = L.convert(L.value(source), dtype)
        source_dims = L.types[updates][1]
        if source_dims != index_dims:  # torch reads src's leading index.shape block
            bounds = ",".join(f"[0:{d}]" for d in index_dims)
            updates = L.emit("slice", dtype, index_dims, f"slice({updates}), slice={{{bounds}}}")
    else:
        updates = L.constant(source, dtype, index_dims)
    indices = _full_indices(L, index_value, dim % rank, rank)
    every = ",".join(map(str, range(rank)))
    combine = L.region("add" if node.target is aten.scatter_add.default else "second", dtype)
    return L.emit("scatter", dtype, dims,
                  f"scatter({L.operand(x, dtype, dims)}, {indices}, {updates}), update_window_dims={{}}, "
                  f"inserted_window_dims={{{every}}}, scatter_dims_to_operand_dims={{{every}}}, "
                  f"index_vector_dim={rank}, to_apply={combine}")


@_lower(aten.embedding_dense_backward.default)
def _embedding_backward(L, node, grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    if scale_grad_by_freq:
        raise Unsupported("embedding backward with scale_grad_by_freq=True")
    dtype, dims = _meta(node)
    width = dims[1]
    index = L.value(indices)
    index_dtype, index_dims = L.types[index]
    count = math.prod(index_dims)
    rows = L.reshape(L.convert(L.value(grad), dtype), (count, width))
    index = L.reshape(index, (count,))
    if padding_idx is not None and padding_idx >= 0:  # the padding row gets no gradient
        keep = L.emit("compare", torch.bool, (count,),
                      f"compare({index}, {L.constant(padding_idx, index_dtype, (count,))}), direction=NE")
        rows = L.emit("select", dtype, (count, width),
                      f"select({L.broadcast(L.reshape(keep, (count, 1)), (count, width))}, {rows}, "
                      f"{L.constant(0, dtype, (count, width))})")
    return L.emit("scatter", dtype, dims,
                  f"scatter({L.constant(0, dtype, dims)}, {L.reshape(index, (count, 1))}, {rows}), "
                  f"update_window_dims={{1}}, inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, "
                  f"index_vector_dim=1, to_apply={L.region('add', dtype)}")


@_lower(aten.slice_scatter.default, aten.select_scatter.default)
def _slice_scatter(L, node, base, src, dim=0, *bounds):
    """base with src written over base[..., start:end, ...] (slice_scatter, step 1) or over
    base[..., index, ...] (select_scatter): a dynamic-update-slice at constant offsets."""
    dtype, dims = _meta(node)
    axis = dim % len(dims)
    if node.target is aten.select_scatter.default:
        start = bounds[0] % dims[axis]
        src_dims = tuple(1 if d == axis else size for d, size in enumerate(dims))
    else:
        start, end, step = (list(bounds) + [None, None, None])[:3]
        if step not in (None, 1):
            raise Unsupported(f"slice_scatter with step {step}")
        start = 0 if start is None else (start + dims[axis] if start < 0 else min(start, dims[axis]))
        end = dims[axis] if end is None else (end + dims[axis] if end < 0 else min(end, dims[axis]))
        src_dims = tuple(end - start if d == axis else size for d, size in enumerate(dims))
    update = L.reshape(L.convert(L.value(src), dtype), src_dims)
    offsets = [L.constant(start if d == axis else 0, torch.int32) for d in range(len(dims))]
    return L.emit("dynamic-update-slice", dtype, dims,
                  f"dynamic-update-slice({L.operand(base, dtype, dims)}, {update}, {', '.join(offsets)})")


@_lower(aten.embedding.default)
def _embedding(L, node, weight, indices, *rest):
    dtype, dims = _meta(node)
    table = L.value(weight)
    rows, width = L.types[table][1]
    index = L.value(indices)
    index_dims = L.types[index][1]
    index = L.reshape(index, index_dims + (1,))
    return L.emit("gather", dtype, dims,
                  f"gather({table}, {index}), offset_dims={{{len(index_dims)}}}, collapsed_slice_dims={{0}}, "
                  f"start_index_map={{0}}, index_vector_dim={len(index_dims)}, slice_sizes={{1,{width}}}")


# --- the backend ---------------------------------------------------------------------------------

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
