"""Lowerings of the ``aten._foreach_*`` ops that torch's optimizers emit (AdamW, Adam, SGD,
RMSprop, Adagrad with foreach=True): each is its single-tensor op applied to every element of
its lists, and its result the list of those values. Functionalization writes the in-place forms
(``_foreach_add_``) as the functional op plus ``copy_`` into the parameters and state, which
the backend turns into input/output aliases: the step writes the parameters where they lie.
"""
from __future__ import annotations

import torch

from ._lowering import _LOWERINGS, _lower, aten
from ._types import Unsupported, _meta


class _Element:
    """Element i of a foreach op, seen by a single-tensor lowering as its node."""

    def __init__(self, node, index, target):
        values = node.meta.get("val")
        if not isinstance(values, (list, tuple)) or index >= len(values):
            raise Unsupported(f"{node.name}: a foreach op without a list of results")
        self.meta = {"val": values[index]}
        self.target = target
        self.name = f"{node.name}[{index}]"


def _elements(node):
    return range(len(node.meta["val"]))


def _apply(L, node, target, args_of, kwargs=None):
    """The single-tensor lowering of `target` on each element: args_of(i) gives its arguments."""
    handler = _LOWERINGS.get(target)
    if handler is None:
        raise Unsupported(f"{node.target}: no lowering of {target}")
    return tuple(handler(L, _Element(node, i, target), *args_of(i), **(kwargs or {})) for i in _elements(node))


def _scalar_of(L, scalars, index, dtype):
    """Element `index` of a 1-D tensor of scalars (the .Tensor overloads) as a 0-d value."""
    value = L.value(scalars)
    sliced = L.emit("slice", L.types[value][0], (1,), f"slice({value}), slice={{[{index}:{index + 1}]}}")
    return L.convert(L.reshape(sliced, ()), dtype)


# foreach op name -> (single op with a tensor second operand, with a number second operand)
_BINARY = {"add": (aten.add.Tensor, aten.add.Tensor), "sub": (aten.sub.Tensor, aten.sub.Tensor),
           "mul": (aten.mul.Tensor, aten.mul.Tensor), "div": (aten.div.Tensor, aten.div.Tensor),
           "maximum": (aten.maximum.default, aten.maximum.default),
           "minimum": (aten.minimum.default, aten.minimum.default),
           "pow": (aten.pow.Tensor_Tensor, aten.pow.Tensor_Scalar),
           "clamp_min": (aten.maximum.default, aten.maximum.default),
           "clamp_max": (aten.minimum.default, aten.minimum.default)}


def _binary(tensor_target, scalar_target):
    """The lowerings of one binary foreach op's overloads (List, Scalar, ScalarList, Tensor)."""

    def lower_list(L, node, tensors, others, *, alpha=1):
        kwargs = {"alpha": alpha} if alpha != 1 else {}
        return _apply(L, node, tensor_target, lambda i: (tensors[i], others[i]), kwargs)

    def lower_scalar(L, node, tensors, scalar):
        return _apply(L, node, scalar_target, lambda i: (tensors[i], scalar))

    def lower_scalar_list(L, node, tensors, scalars):
        return _apply(L, node, scalar_target, lambda i: (tensors[i], scalars[i]))

    def lower_tensor(L, node, tensors, other, *, alpha=1):
        kwargs = {"alpha": alpha} if alpha != 1 else {}
        return _apply(L, node, tensor_target, lambda i: (tensors[i], other), kwargs)

    return {"List": lower_list, "Scalar": lower_scalar, "ScalarList": lower_scalar_list, "Tensor": lower_tensor}


def _register():
    for name, (tensor_target, scalar_target) in _BINARY.items():
        packet = getattr(aten, f"_foreach_{name}", None)
        if packet is None:
            continue
        for overload, lower in _binary(tensor_target, scalar_target).items():
            if overload in packet.overloads():
                _lower(getattr(packet, overload))(lower)
    for name in ("sqrt", "neg", "reciprocal", "exp", "abs", "sign", "log", "sigmoid", "tanh", "rsqrt", "log1p",
                 "expm1", "sin", "cos", "erf", "floor", "ceil", "round", "trunc"):
        packet = getattr(aten, f"_foreach_{name}", None)
        single = getattr(aten, name, None)
        if packet is None or single is None or "default" not in packet.overloads():
            continue

        def lower_unary(L, node, tensors, single=single.default):
            return _apply(L, node, single, lambda i: (tensors[i],))

        _lower(packet.default)(lower_unary)


_register()


@_lower(aten._foreach_pow.ScalarAndTensor)
def _foreach_pow_base(L, node, base, exponents):
    return _apply(L, node, aten.pow.Scalar, lambda i: (base, exponents[i]))


def _pointwise3(combine):
    """self + value * combine(tensor1, tensor2), in torch's CPU order: (value * tensor1) op tensor2."""

    def lower(L, node, tensors, first, second, values=1):
        results = []
        for i in _elements(node):
            dtype, dims = _meta(_Element(node, i, node.target))
            if isinstance(values, torch.fx.Node):  # the .Tensor overload: a 1-D tensor of scalars
                value = L.broadcast(_scalar_of(L, values, i, dtype), dims)
            else:
                value = L.constant(values[i] if isinstance(values, (list, tuple)) else values, dtype, dims)
            a, b = L.operand(first[i], dtype, dims), L.operand(second[i], dtype, dims)
            scaled = L.emit("multiply", dtype, dims, f"multiply({value}, {a})")
            term = L.emit(combine, dtype, dims, f"{combine}({scaled}, {b})")
            results.append(L.emit("add", dtype, dims, f"add({L.operand(tensors[i], dtype, dims)}, {term})"))
        return tuple(results)

    return lower


for _name, _combine in (("addcmul", "multiply"), ("addcdiv", "divide")):
    _packet = getattr(aten, f"_foreach_{_name}")
    for _overload in ("Scalar", "ScalarList", "Tensor"):
        if _overload in _packet.overloads():
            _lower(getattr(_packet, _overload))(_pointwise3(_combine))


def _lerp(L, node, tensors, ends, weights):
    """torch's lerp: start + w (end - start) where |w| < 0.5, else end - (end - start)(1 - w)."""
    results = []
    for i in _elements(node):
        dtype, dims = _meta(_Element(node, i, node.target))
        start, end = L.operand(tensors[i], dtype, dims), L.operand(ends[i], dtype, dims)
        weight = weights[i] if isinstance(weights, (list, tuple)) else weights
        w = L.operand(weight, dtype, dims)
        difference = L.emit("subtract", dtype, dims, f"subtract({end}, {start})")
        low = L.emit("add", dtype, dims, f"add({start}, {L.emit('multiply', dtype, dims, f'multiply({w}, {difference})')})")
        rest = L.emit("subtract", dtype, dims, f"subtract({L.constant(1, dtype, dims)}, {w})")
        high = L.emit("subtract", dtype, dims, f"subtract({end}, {L.emit('multiply', dtype, dims, f'multiply({difference}, {rest})')})")
        if not isinstance(weight, torch.fx.Node):
            results.append(low if abs(weight) < 0.5 else high)
            continue
        magnitude = L.emit("abs", dtype, dims, f"abs({w})")
        small = L.emit("compare", torch.bool, dims, f"compare({magnitude}, {L.constant(0.5, dtype, dims)}), direction=LT")
        results.append(L.emit("select", dtype, dims, f"select({small}, {low}, {high})"))
    return tuple(results)


for _overload in ("Scalar", "List", "ScalarList"):
    if _overload in aten._foreach_lerp.overloads():
        _lower(getattr(aten._foreach_lerp, _overload))(_lerp)
