"""Lowerings of elementwise ops, creation, matrix products and reductions."""
from __future__ import annotations

import math

import torch

from ._lowering import _lower, aten
from ._types import Unsupported, _meta, _shape_text


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


@_lower(aten.remainder.Tensor, aten.remainder.Scalar)
def _remainder(L, node, a, b):
    """torch's remainder takes the divisor's sign (Python's %), as torch's CPU kernel computes it:
    the truncated remainder (HLO's, C's fmod), plus the divisor where that is nonzero and its
    sign differs from the divisor's: the same operations, so the same values, NaN included."""
    dtype, dims = _meta(node)
    if dtype == torch.bool or dtype.is_complex:
        raise Unsupported(f"remainder on {dtype}")
    divisor = L.operand(b, dtype, dims)
    truncated = L.emit("remainder", dtype, dims, f"remainder({L.operand(a, dtype, dims)}, {divisor})")
    zero = L.constant(0, dtype, dims)

    def compare(x, direction):
        return L.emit("compare", torch.bool, dims, f"compare({x}, {zero}), direction={direction}")

    signs_differ = L.emit("xor", torch.bool, dims, f"xor({compare(truncated, 'LT')}, {compare(divisor, 'LT')})")
    shift = L.emit("and", torch.bool, dims, f"and({compare(truncated, 'NE')}, {signs_differ})")
    shifted = L.emit("add", dtype, dims, f"add({truncated}, {divisor})")
    return L.emit("select", dtype, dims, f"select({shift}, {shifted}, {truncated})")


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


@_lower(aten.flip.default)
def _flip(L, node, x, dims_arg):
    dtype, dims = _meta(node)
    axes = sorted({d % len(dims) for d in dims_arg}) if dims else []
    if not axes:
        return L.value(x)
    return L.emit("reverse", dtype, dims, f"reverse({L.value(x)}), dimensions={{{','.join(map(str, axes))}}}")


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
