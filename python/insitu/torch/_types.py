"""Element types and static shapes of FX nodes, as HLO types; Unsupported, the lowering's refusal;
write_back, the one copy of a result into a tensor insitu could not write in place."""
from __future__ import annotations

import math

import torch


_DTYPES = {
    torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.int8: "s8", torch.int16: "s16", torch.int32: "s32", torch.int64: "s64", torch.uint8: "u8",
    torch.bool: "pred", torch.complex64: "c64", torch.complex128: "c128",
}


class Unsupported(Exception):
    """A graph this module cannot lower; the message names the op and why."""


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


def write_back(pairs):
    """Copies each result into its tensor, for the tensors insitu did not write where they lie
    (not donated: not contiguous, or sharing memory with another argument). `pairs` is
    (tensor, result) pairs; returns the bytes copied, which every caller reports."""
    copied = 0
    for tensor, result in pairs:
        tensor.copy_(result)
        copied += result.numel() * result.element_size()
    return copied
