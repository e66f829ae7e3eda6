"""Lowerings of the neural-network ops: convolution, batch and layer norm, softmax."""
from __future__ import annotations

import math

import torch

from ._lowering import _lower, aten
from ._types import Unsupported, _meta


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


def _window(sizes, strides, padding, lhs_dilate=None, rhs_dilate=None):
    """An HLO convolution window; padding as (low, high) pairs."""
    text = (f"size={'x'.join(map(str, sizes))} stride={'x'.join(map(str, strides))} "
            f"pad={'x'.join(f'{low}_{high}' for low, high in padding)}")
    if lhs_dilate:
        text += f" lhs_dilate={'x'.join(map(str, lhs_dilate))}"
    if rhs_dilate:
        text += f" rhs_dilate={'x'.join(map(str, rhs_dilate))}"
    return text


@_lower(aten.convolution_backward.default)
def _convolution_backward(L, node, grad_out, x, weight, bias_sizes, stride, padding, dilation, transposed,
                          output_padding, groups, output_mask):
    """The gradients of a convolution (x [N, C, *I], weight [O, C/g, *K], out [N, O, *Y]) as HLO
    convolutions, the way XLA writes them:
    - input: grad_out dilated by the stride, convolved with the kernel reversed in space, its
      input and output features swapped (per group), padded d(K-1)-p low;
    - weight: x with its batch and features swapped, convolved with grad_out as the kernel
      (window Y, taps dilated by the stride, moved by the dilation), one batch group per group;
    - bias: grad_out summed over all but the features."""
    if transposed:
        raise Unsupported("the gradient of a transposed convolution is not lowered yet")
    metas = node.meta["val"]
    dtype = metas[0].dtype if metas[0] is not None else metas[1].dtype
    go = L.convert(L.value(grad_out), dtype)
    go_dims = L.types[go][1]
    spatial = len(go_dims) - 2
    letters = "".join(str(i) for i in range(spatial))
    x_value, w_value = L.convert(L.value(x), dtype), L.convert(L.value(weight), dtype)
    x_dims, w_dims = L.types[x_value][1], L.types[w_value][1]
    sizes_in, kernel, sizes_out = x_dims[2:], w_dims[2:], go_dims[2:]
    results = [None, None, None]
    if output_mask[0]:
        low = [d * (k - 1) - p for k, p, d in zip(kernel, padding, dilation)]
        if any(v < 0 for v in low):
            raise Unsupported(f"a convolution gradient with padding {list(padding)} beyond its kernel's reach")
        high = [i - 1 + p - (y - 1) * s for i, p, y, s in zip(sizes_in, padding, sizes_out, stride)]
        out_features, in_per_group = w_dims[0], w_dims[1]
        reversed_w = L.emit("reverse", dtype, w_dims,
                            f"reverse({w_value}), dimensions={{{','.join(str(2 + i) for i in range(spatial))}}}")
        if groups == 1:
            flipped = reversed_w
        else:  # [O, C/g, K] -> [g, O/g, C/g, K] -> [O/g, g, C/g, K] -> [O/g, C, K]: per group, O/g in, C out
            split = (groups, out_features // groups, in_per_group) + kernel
            moved = L.emit("transpose", dtype, (split[1], split[0]) + split[2:],
                           f"transpose({L.reshape(reversed_w, split)}), dimensions={{1,0,{','.join(str(2 + i) for i in range(spatial + 1))}}}")
            flipped = L.reshape(moved, (out_features // groups, groups * in_per_group) + kernel)
        window = _window(kernel, [1] * spatial, zip(low, high), lhs_dilate=stride, rhs_dilate=dilation)
        results[0] = L.emit("convolution", dtype, x_dims,
                            f"convolution({go}, {flipped}), window={{{window}}}, dim_labels=bf{letters}_io{letters}->bf{letters}, "
                            f"feature_group_count={groups}")
    if output_mask[1]:
        # window k reads x[y*s - p + k*d]: the high padding that gives K outputs, or a slice of x
        # where the strided convolution never read x's last elements
        high = [(k - 1) * d + (y - 1) * s + 1 - i - p
                for k, d, y, s, i, p in zip(kernel, dilation, sizes_out, stride, sizes_in, padding)]
        source = x_value
        if any(h < 0 for h in high):
            kept = x_dims[:2] + tuple(i + min(h, 0) for i, h in zip(sizes_in, high))
            bounds = ",".join(f"[0:{d}]" for d in kept)
            source = L.emit("slice", dtype, kept, f"slice({x_value}), slice={{{bounds}}}")
            high = [max(h, 0) for h in high]
        window = _window(sizes_out, dilation, zip(padding, high), rhs_dilate=stride)
        results[1] = L.emit("convolution", dtype, w_dims,
                            f"convolution({source}, {go}), window={{{window}}}, dim_labels=fb{letters}_io{letters}->fb{letters}, "
                            f"batch_group_count={groups}")
    if output_mask[2]:
        results[2] = L.reduce(go, [0] + [2 + i for i in range(spatial)], "add", 0, dtype)
    return tuple(results)


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
