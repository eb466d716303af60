"""The layers an ONNX import builds: accelerator convs, matmuls, resadds and max pools with their host
epilogues, on int8 operands (:mod:`networks.onnx_quant` has the arithmetic), and the network's tensors as
they are built. :class:`networks.onnx_import._Importer` reads the ONNX nodes and calls these builders."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from toolkit.conv.ops import conv2d, depthwise_conv2d
from toolkit.gemm import matmul
from toolkit.maxpool import maxpool2d
from toolkit.maxpool.tiles import store_can_pool
from toolkit.norm import softmax
from toolkit.resadd import resadd

from . import host_ops
from .network import AccelLayer, Feed, HostLayer, TensorInfo, convert_layout, to_layout_shape
from .onnx_quant import (ACCEL_TYPES, ONNX_DTYPES, TINY, FloatBias, NodeError, Quant, Shares, along, broadcasts, check_bytes,
                         node_attrs, offset_per_channel, requant_scale, scale_ratio, window_shares)


def unit_writes_softmax(q: Quant) -> bool:
    """Whether the normalization unit can write a softmax quantized as ``q``: symmetric int8 of a step of at
    least 1/127 (it writes 127 * p * scale, clipped to int8, with no zero point). Other quantizations (uint8, a
    zero point, finer steps) run the softmax on the host, as onnxruntime does."""
    return q.dtype == "int8" and q.zero_point == 0 and np.float32(q.scale) >= np.float32(1 / 127)


@dataclass
class Layers:
    """The network under construction: its tensors, layers and constants, and the builders of its layers."""

    proto: Any
    name: str
    fuse_pool: bool
    store_requant: bool   # the store unit adds an output zero point and clips to uint8
    store_col_scales: bool = False   # the store unit scales each output channel by its own scale
    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    layers: list = field(default_factory=list)
    consts: dict[str, np.ndarray] = field(default_factory=dict)           # value (float once dequantized)
    producer: dict[str, Any] = field(default_factory=dict)                # tensor -> layer that writes it

    def __post_init__(self) -> None:
        from onnx import numpy_helper
        g = self.proto.graph
        self.consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
        self.types: dict[str, tuple[str, tuple | None]] = {}
        for vi in (*g.input, *g.value_info, *g.output):
            tt = vi.type.tensor_type
            dims = tuple(d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim) \
                if tt.HasField("shape") else None
            self.types[vi.name] = (ONNX_DTYPES.get(tt.elem_type, str(tt.elem_type)), dims)
        self.uses: dict[str, int] = {}
        for node in g.node:
            for t in node.input:
                self.uses[t] = self.uses.get(t, 0) + 1
        self.graph_outputs = tuple(o.name for o in g.output)

    # ---- helpers ---------------------------------------------------------------------------
    def fail(self, node: Any, reason: str) -> ValueError:
        return NodeError(f"node {node.name!r} ({node.op_type}): {reason}")

    def nchw(self, node: Any, tensor: str) -> tuple[int, ...]:
        """The shape of a 2-D window op's input, or the reason the accelerator cannot run the op."""
        shape = self.shape(node, tensor)
        if len(shape) != 4:
            raise self.fail(node, f"input {tensor!r} is {shape}, not N x C x H x W: the accelerator's convs and "
                                  "pools are 2-D")
        return shape

    def normal(self, node: Any, what: str, value: float) -> float:
        """A scale the accelerator applies: a positive normal float32 (scales of extreme magnitudes
        under- or overflow when combined)."""
        if not (math.isfinite(value) and value >= TINY):
            raise self.fail(node, f"{what} is {value}, not a positive normal float32 (a scale of the model is "
                                  "too small or too large)")
        return value

    def shape(self, node: Any, tensor: str) -> tuple[int, ...]:
        if tensor in self.tensors:
            return self.tensors[tensor].shape
        dtype, dims = self.types.get(tensor, (None, None))
        if dims is None or any(d is None for d in dims):
            raise self.fail(node, f"tensor {tensor!r} has no static shape after shape inference ({dims}): "
                                  "dynamic shapes are not supported; fix every dimension of the model's inputs")
        return tuple(dims)

    def add_tensor(self, info: TensorInfo, layer: Any) -> None:
        self.tensors[info.name] = info
        self.producer[info.name] = layer


    def weight(self, node: Any, w: tuple[np.ndarray, Quant, int], out_axis: int) -> tuple[np.ndarray, Any, np.ndarray]:
        """(int8 weights w8, weight scale: one or one per output channel, the shift d per output channel) with
        ``w - zw = w8 + d`` exactly. Per channel, w8 is w - zw where that fits int8 (d = 0: always so for
        onnxruntime's symmetric weights), else w - 128 for uint8 and w itself for int8 (d = 128 - zw, or -zw):
        the accelerator multiplies w8, and d times the sum of the inputs each output reads joins the sums on the
        host (:func:`host_ops.window_sum_term`, :func:`host_ops.row_sum_term`)."""
        data, q, axis = w
        if not q.per_tensor and axis != out_axis:
            raise self.fail(node, f"weight scales are per channel along axis {axis}, not along the output "
                                  f"channels (axis {out_axis})")
        if data.dtype not in (np.int8, np.uint8):
            raise self.fail(node, f"weight is {data.dtype}, not int8 or uint8: the accelerator multiplies 8-bit "
                                  "weights")
        others = tuple(d for d in range(data.ndim) if d != out_axis)
        zw = np.broadcast_to(np.asarray(q.zero_point, np.int64).reshape(-1), data.shape[out_axis:out_axis + 1])
        exact = data.astype(np.int64) - along(zw, out_axis, data.ndim)
        fits = (exact.min(axis=others, initial=0) >= -128) & (exact.max(axis=others, initial=0) <= 127)
        shift = np.where(fits, 0, (128 if data.dtype == np.uint8 else 0) - zw)
        ints = exact - along(shift, out_axis, data.ndim)
        return ints.astype(np.int8), q.scale, shift

    def int8_input(self, x: str, q: Quant) -> tuple[str, int]:
        """The int8 tensor the accelerator reads for ``x``, and its zero point: a uint8 tensor is read as
        x - 128 (a host layer flips its top bit, once per tensor) with its zero point 128 lower, so that
        x - zx is unchanged."""
        if q.dtype == "int8":
            return x, q.zero_point
        name = f"{x}__int8"
        if name not in self.tensors:
            layer = HostLayer(f"{x}_to_int8", "ShiftToInt8", (x,), {}, {}, (name,), host_ops.shift_to_int8)
            self.layers.append(layer)
            self.add_tensor(replace(self.tensors[x], name=name, dtype="int8", zero_point=q.zero_point - 128), layer)
        return name, q.zero_point - 128


    # ---- layer builders ----------------------------------------------------------------------------
    def window(self, node: Any) -> tuple[int, int]:
        """(stride, padding) of a Conv/MaxPool, or the reason the accelerator cannot run it."""
        attrs = node_attrs(node)
        if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET", b"VALID", "VALID"):
            raise self.fail(node, f"auto_pad={attrs['auto_pad']!r}: give explicit pads")
        if any(d != 1 for d in attrs.get("dilations", [1, 1])):
            raise self.fail(node, f"dilations {attrs['dilations']} are not supported (1 only)")
        if attrs.get("ceil_mode", 0):
            raise self.fail(node, "ceil_mode=1 is not supported")
        strides = list(attrs.get("strides", [1, 1]))
        pads = list(attrs.get("pads", [0, 0, 0, 0]))
        if len(set(strides)) != 1:
            raise self.fail(node, f"strides {strides} differ between height and width: the accelerator's windows "
                                  "take one stride")
        if len(set(pads)) != 1:
            raise self.fail(node, f"pads {pads} are asymmetric: the accelerator's windows take one padding")
        return strides[0], pads[0]

    def conv(self, node: Any, x: tuple[str, Quant], w: tuple[np.ndarray, Quant, int], b: Any, out: str, yq: Quant,
             relu: bool) -> None:
        (xname, xq), weight = x, w[0]
        n, c, h, wd = self.nchw(node, xname)
        if weight.ndim != 4:
            raise self.fail(node, f"weight is {weight.shape}, not K x C x KH x KW: the accelerator's convs are 2-D")
        weight, ws, shift = self.weight(node, w, 0)
        k, cg, kh, kw = weight.shape
        stride, pad = self.window(node)
        group = node_attrs(node).get("group", 1)
        if cg * group != c:
            raise self.fail(node, f"weight {weight.shape} with group={group} takes {cg * group} input channels, "
                                  f"the input {xname!r} has {c}")
        scale = self.scales(node, "the requantization scale x_scale * w_scale / y_scale",
                            requant_scale(xq.scale, ws, yq.scale))
        bias = None
        if b is not None:
            bias, bs = b
            if bias.shape != (k,):
                raise self.fail(node, f"bias is {bias.shape}: the conv has {k} output channels, one bias each")
            in_scale = np.float32(xq.scale) * np.asarray(ws, np.float32)
            if bs is None:
                bias = FloatBias(bias, in_scale)
            elif bias.dtype != np.int32 or not np.allclose(bs, in_scale, rtol=1e-5, atol=0):
                raise self.fail(node, f"bias is {bias.dtype} with scale {bs}: the accelerator adds an int32 bias "
                                      f"at input scale x weight scale")
        if group == 1:
            op = conv2d(n, h, wd, c, k, kernel=(kh, kw), stride=stride, padding=pad)
            wq = np.ascontiguousarray(weight.transpose(2, 3, 1, 0))
        elif group == c == k and cg == 1:
            op = depthwise_conv2d(n, h, wd, c, kernel=(kh, kw), stride=stride, padding=pad)
            wq = np.ascontiguousarray(weight[:, 0].transpose(1, 2, 0))
        else:
            raise self.fail(node, f"group={group} with {c} input and {k} output channels: only group=1 and "
                                  "depthwise (group = channels) convs map to the accelerator")
        xint, xz = self.int8_input(xname, xq)
        self.gemm_layer(node, op, {"input": Feed(xint, "nhwc", (n, h, wd, c))}, {"weight": wq}, bias,
                        out, yq, scale, relu, window_shares(op, wq, xint, xz, shift), "nhwc",
                        (n, k, op.out_h, op.out_w))

    # Over 40 lines: one mapping whose cases (constant or activation B, zero points, Gemm's transB) share the operands.
    def matmul(self, node: Any, a: tuple[str, Quant], b: tuple, bias: Any, out: str, yq: Quant, relu: bool,
               gemm: bool) -> None:
        (aname, aq), (bv, bq, b_axis, b_const) = a, b
        attrs = node_attrs(node)
        if gemm and (attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0):
            raise self.fail(node, "Gemm with transA=1, alpha != 1 or beta != 1 is not supported")
        ashape = self.shape(node, aname)
        aint, az = self.int8_input(aname, aq)
        feeds, repeat = {}, 1
        if b_const:
            if bv.ndim != 2:
                raise self.fail(node, f"constant B must be a 2-D matrix, got {bv.dtype} {bv.shape}")
            w, bs, shift = self.weight(node, (bv, bq, b_axis), 0 if attrs.get("transB", 0) else 1)
            w = w.T if attrs.get("transB", 0) else w
            k_, n_ = w.shape
            if ashape[-1:] != (k_,):
                raise self.fail(node, f"A {ashape} @ B {w.shape}: A's columns and B's rows differ")
            m_ = int(np.prod(ashape[:-1]))
            feeds["A"] = Feed(aint, "native", (m_, k_))
            consts = {"B": np.ascontiguousarray(w)}
            # sum_k (a - za)(w8 + d) = sum a w8 - za sum_k w8 - za K d + d sum_k a
            shares = Shares(-az * (w.astype(np.int64).sum(axis=0) + k_ * shift),
                             ((aint, host_ops.row_sum_term(shift)),) if shift.any() else ())
        else:
            bs = bq.scale
            bint, bz = self.int8_input(bv, bq)
            bshape = self.shape(node, bv)
            if len(ashape) != len(bshape) or ashape[:-2] != bshape[:-2] or len(ashape) < 2:
                raise self.fail(node, f"A {ashape} @ B {bshape}: batched matmuls need equal batch dimensions")
            if ashape[-1] != bshape[-2]:
                raise self.fail(node, f"A {ashape} @ B {bshape}: A's columns and B's rows differ")
            repeat = int(np.prod(ashape[:-2]))
            m_, k_, n_ = ashape[-2], ashape[-1], bshape[-1]
            lead = (repeat,) if repeat > 1 else ()
            feeds["A"] = Feed(aint, "native", (*lead, m_, k_), repeat > 1)
            feeds["B"] = Feed(bint, "native", (*lead, k_, n_), repeat > 1)
            consts = {}
            # sum_k (a - za)(b - zb) = sum a b - zb sum_k a - za sum_k b + K za zb
            shares = Shares(np.full(n_, k_ * az * bz, np.int64),
                             tuple((t, term) for t, z, term in ((aint, bz, host_ops.row_sum_term(-bz)),
                                                                 (bint, az, host_ops.col_sum_term(-az))) if z))
        if bias is not None:
            bvals, float_bias = bias[0], bias[1] is None
            if bvals.dtype != (np.float32 if float_bias else np.int32) or bvals.size != n_:
                raise self.fail(node, f"bias C must be {n_} int32 values, got {bvals.dtype} {bvals.shape}")
            bias = FloatBias(bvals.reshape(n_), np.float32(aq.scale) * np.asarray(bs, np.float32)) if float_bias \
                else bvals.reshape(n_)
        op = matmul(m_, n_, k_)
        scale = self.scales(node, "the requantization scale a_scale * b_scale / y_scale",
                            requant_scale(aq.scale, bs, yq.scale))
        self.gemm_layer(node, op, feeds, consts, bias, out, yq, scale, relu, shares, "native", (*ashape[:-1], n_),
                        repeat)

    def gemm_layer(self, node: Any, op: Any, feeds: dict[str, Feed], consts: dict[str, np.ndarray],
                   bias: np.ndarray | None, out: str, yq: Quant, scale: np.ndarray, relu: bool, shares: Shares,
                   layout: str, shape: tuple[int, ...], repeat: int = 1) -> None:
        """A conv or matmul. ``shares`` are the zero points' shares of each sum (exact in int32). Where they are
        a constant, one per output channel, and the output is symmetric int8 per tensor (or, with the store
        unit's requantization extension, any 8-bit output with one scale), they fold into the bias and the
        store unit requantizes; else the layer writes its int32 sums and a host epilogue adds them and
        requantizes as onnxruntime does (Gemmini's store unit has no zero point, uint8 range or per-channel
        scale)."""
        kind = "channel" if op.KIND != "matmul" else "row"
        per_channel = offset_per_channel(shares.offset, layout == "nhwc")
        float_bias = bias if isinstance(bias, FloatBias) else None
        in_store = yq.plain or (self.store_requant and yq.per_tensor and yq.dtype in ACCEL_TYPES)
        col_scaled = self.store_col_scales and np.ndim(scale) == 1   # the column-scale extension's

        if in_store and (np.ndim(scale) == 0 or col_scaled) and per_channel is not None and not shares.terms \
                and float_bias is None:
            total = per_channel if bias is None else per_channel + bias
            if bias is not None or total.any():
                consts = {**consts, "bias": self.int32(node, "bias + the input zero point's share", total)}
            epi = dict(bias=kind if "bias" in consts else None, activation="relu" if relu else "none",
                       scale=float(scale) if np.ndim(scale) == 0 else tuple(np.asarray(scale, np.float64).tolist()),
                       out_dtype=yq.dtype, out_offset=int(yq.zero_point))
            self.accel(node, replace(op, **epi), feeds, consts, out, yq, layout, shape, repeat)
            return
        acc, bias = f"{out}__acc", None if float_bias else bias
        if bias is not None:
            consts = {**consts, "bias": bias.astype(np.int32)}
        op = replace(op, bias=kind if bias is not None else None, out_dtype="int32")
        self.accel(node, op, feeds, consts, acc, Quant(1.0, 0, "int32"), layout, shape, repeat)
        self.epilogue(node, acc, out, yq, scale, shares, relu, layout == "nhwc", float_bias)

    def epilogue(self, node: Any, acc: str, out: str, yq: Quant, scale: np.ndarray, shares: Shares, relu: bool,
                 channels_first: bool, float_bias: FloatBias | None = None) -> None:
        """The host requantization of an int32 conv/matmul output (in ONNX layout: channels on axis 1 of a
        conv's NCHW, last of a matmul's), with a float bias on onnxruntime's float path."""
        def per_channel(values: Any) -> np.ndarray:
            values = np.asarray(values, np.float32)
            return values.reshape(-1, 1, 1) if channels_first and values.ndim else values
        offset = self.int32(node, "the zero points' constant share of the sums", shares.offset)
        names, terms = tuple(t for t, _ in shares.terms), tuple(f for _, f in shares.terms)
        if float_bias is None:
            fn = host_ops.requantize_accumulator(per_channel(scale), yq.zero_point, yq.dtype, offset, relu, terms)
            rounds = host_ops.accumulator_value(per_channel(scale), offset, terms)
        else:
            fb = (per_channel(float_bias.in_scale), per_channel(float_bias.values))
            fn = host_ops.requantize_float_bias(*fb, yq.host(), offset, relu, terms)
            rounds = host_ops.float_bias_value(*fb, yq.scale, offset, terms)
        why = ("Gemmini's store unit has no zero point, uint8 range or per-channel scale: the accelerator writes int32 "
               "and this epilogue requantizes as onnxruntime does")
        layer = HostLayer(f"{node.name}_requantize", "Requantize", (acc, *names), {}, {}, (out,), fn, rounds, why)
        self.layers.append(layer)
        self.add_tensor(TensorInfo(out, self.tensors[acc].shape, yq.dtype, yq.scale, zero_point=yq.zero_point),
                        layer)

    def int32(self, node: Any, what: str, values: np.ndarray) -> np.ndarray:
        if values.size and (values.min() < -2 ** 31 or values.max() >= 2 ** 31):
            raise self.fail(node, f"{what} overflows int32 (up to {np.abs(values).max():,})")
        return values.astype(np.int32)

    def scales(self, node: Any, what: str, scale: np.ndarray) -> Any:
        """A requantization scale (one, or one per output channel), each a positive normal float32."""
        for v in np.ravel(scale):
            self.normal(node, what, float(v))
        return float(scale) if np.ndim(scale) == 0 else scale

    def resadd(self, node: Any, a: tuple, b: tuple, out: str, yq: Quant, relu: bool) -> None:
        if a[2] and b[2]:
            raise self.fail(node, "both operands are constants")
        if a[2]:
            a, b = b, a
        shape = self.shape(node, a[0])
        other = b[0].shape if b[2] else self.shape(node, b[0])
        if other != shape and not (b[2] and broadcasts(other, shape)):
            raise self.fail(node, f"operands {shape} and {other}: the resadd needs equal shapes (or a constant "
                                  "that broadcasts to the activation's)")
        int8 = all(q.per_tensor and q.dtype == "int8" for q in (a[1], b[1], yq))
        if not int8 or relu and yq.zero_point:    # uint8, or a ReLU at a zero point (the store clamps at 0)
            self.quantized_add(node, a, b, out, yq, relu, shape)
            return
        ys = yq.scale
        nhwc = len(shape) == 4 and any(not o[2] and self.tensors[o[0]].layout == "nhwc" for o in (a, b))
        layout = "nhwc" if nhwc else "native"
        op_shape = to_layout_shape(shape, layout) if nhwc else (1, 1, int(np.prod(shape[:-1])), shape[-1] if shape else 1)
        ra, rb = (self.normal(node, f"the scale ratio {which}_scale / y_scale", scale_ratio(o[1].scale, ys))
                  for which, o in (("a", a), ("b", b)))
        # operands enter the accumulator scaled by 2^k, so each is rounded to 2^-k of an output step
        k = int(min(40, max(0, math.floor(math.log2(2 ** 13 / (ra + rb))))))
        # zero points: y = rne(ra (a - za) + rb (b - zb)) + zy = rne(ra a + rb b + (zy - ra za - rb zb)), the
        # constant in the accumulator as a bias (zy an integer, so the int8 clip is onnxruntime's)
        offset = round((yq.zero_point - ra * a[1].zero_point - rb * b[1].zero_point) * 2 ** k)
        op = resadd(*op_shape, a_scale=ra * 2 ** k, b_scale=rb * 2 ** k, activation="relu" if relu else "none",
                    scale=2.0 ** -k, bias="channel" if offset else None)
        feeds = {"A": Feed(a[0], layout, op_shape)}
        consts = {"bias": self.int32(node, "the zero points' offset", np.full(op_shape[-1], offset))} if offset else {}
        if b[2]:
            if b[0].dtype != np.int8:
                raise self.fail(node, f"constant operand is {b[0].dtype}, not int8")
            full = np.broadcast_to(b[0], shape)
            consts["B"] = np.ascontiguousarray(convert_layout(np.ascontiguousarray(full), "native", layout)
                                               .reshape(op_shape))
        else:
            feeds["B"] = Feed(b[0], layout, op_shape)
        self.accel(node, op, feeds, consts, out, yq, layout, shape)

    def quantized_add(self, node: Any, a: tuple, b: tuple, out: str, yq: Quant, relu: bool,
                      shape: tuple[int, ...]) -> None:
        """An Add with uint8 operands or output, or a ReLU at a zero point: on the host, as onnxruntime's
        QLinearAdd."""
        inputs = tuple(None if o[2] else o[0] for o in (a, b))
        consts = {i: o[0] for i, o in enumerate((a, b)) if o[2]}
        fn = host_ops.quantized_add((a[1].scale, a[1].zero_point), (b[1].scale, b[1].zero_point), yq.host(), relu)
        why = ("a ReLU at an output zero point (the store clamps at 0)" if relu and yq.zero_point
               else "a uint8 operand or output (the resadd reads and writes int8)")
        layer = HostLayer(node.name, "QLinearAdd", inputs, consts, {}, (out,), fn, why=why)
        self.layers.append(layer)
        self.add_tensor(TensorInfo(out, shape, yq.dtype, yq.scale, zero_point=yq.zero_point), layer)

    def maxpool(self, node: Any, x: tuple[str, Quant], out: str, yq: Quant, dq: str) -> None:
        """int8 on the accelerator (the max commutes with any zero point; padding never wins), fused into the
        conv that writes ``x`` where it can (Conv -> (Relu) -> MaxPool: the store unit pools, no DRAM round
        trip; not with pool padding over values that can be negative, which the store unit pools as 0); uint8
        on the host. Requantized on the host where the output's quantization differs."""
        xname, xq = x
        n, c, h, w = self.nchw(node, xname)
        kernel = tuple(node_attrs(node)["kernel_shape"])
        stride, pad = self.window(node)
        op = maxpool2d(n, h, w, c, kernel=kernel, stride=stride, padding=pad)
        shape = (n, c, op.out_h, op.out_w)
        if self.fuse_pool and yq == xq and self.fuse_into_conv(node, op, xname, dq, out, shape):
            return
        mid = out if yq == xq else f"{out}__max"     # the max at the input's quantization
        if xq.dtype == "int8":
            self.accel(node, op, {"input": Feed(xname, "nhwc", (n, h, w, c))}, {}, mid, xq, "nhwc", shape)
        else:
            self.host_layer(HostLayer(node.name, "MaxPool", (xname,), {}, node_attrs(node), (mid,),
                                      host_ops.FLOAT_OPS["MaxPool"], why="uint8 (the accelerator pools int8)"), shape, xq)
        if mid != out:
            self.host_layer(HostLayer(f"{node.name}_requantize", "Requantize", (mid,), {}, {}, (out,),
                                      host_ops.requantize((xq.scale, xq.zero_point), yq.host()),
                                      why="the pool's output quantization differs from its input's"), shape, yq)

    def softmax(self, node: Any, x: tuple[str, Quant], out: str, yq: Quant) -> None:
        """Softmax over the last axis on the normalization unit: tk.softmax of the int8 rows, I-exp at the input's
        scale (softmax ignores the input's zero point), writing 127 * p * scale = p / y_scale (see
        :func:`unit_writes_softmax`)."""
        xname, xq = x
        shape = self.tensors[xname].shape
        op = softmax(math.prod(shape[:-1]), shape[-1], input_scale=xq.scale, scale=1 / (127 * yq.scale),
                     in_dtype="int8")
        self.accel(node, op, {"X": Feed(xname, "native", op.shape)}, {}, out, yq, "native", shape)

    def sole_output(self, xname: str, dq: str) -> AccelLayer | None:
        """The accelerator layer that writes ``xname`` where one node alone reads it (through ``dq``)."""
        prod = self.producer.get(xname)
        if isinstance(prod, AccelLayer) and self.uses.get(xname, 0) == 1 and self.uses.get(dq, 0) == 1 \
                and xname not in self.graph_outputs:
            return prod
        return None

    def fuse_into_conv(self, node: Any, pool: Any, xname: str, dq: str, out: str, shape: tuple[int, ...]) -> bool:
        """Fold the max pool into the conv2d that writes ``xname`` alone (its store unit pools), if it can."""
        prod = self.sole_output(xname, dq)
        # a col-scaled conv does not pool: only gemmini.h's LOOP_CONV_WS pools, and its loops store several
        # column blocks under the store unit's one scale vector
        if prod is None or prod.op.KIND != "conv2d" or prod.op.pool or prod.op.out_dtype != "int8" \
                or prod.op.col_scaled or not store_can_pool(pool.kernel, pool.stride, pool.padding):
            return False
        op = replace(prod.op, pool=(pool.kernel[0], pool.stride, pool.padding))
        if not op.pool_pads_as_onnx:   # the store unit pools padding as 0: a conv that can store negatives keeps
            return False               # its own max pool layer
        fused = replace(prod, op=op, output=out, nodes=(*prod.nodes, node.name))
        self.layers[self.layers.index(prod)] = fused
        self.add_tensor(replace(self.tensors.pop(xname), name=out, shape=shape), fused)
        return True

    def relu(self, node: Any, x: tuple[str, Quant], dq: str, out: str, yq: Quant) -> None:
        """DequantizeLinear -> Relu -> QuantizeLinear: the producer's ReLU when nothing else reads its output
        and the quantization stays symmetric int8 at one scale, else a requantizing ReLU on the host."""
        xname, xq = x
        prod = self.sole_output(xname, dq)
        fusable = (prod is not None and yq == xq and xq.plain and getattr(prod.op, "activation", "") == "none"
                   and prod.op.KIND != "maxpool" and not getattr(prod.op, "pool", None))
        if fusable:
            fused = replace(prod, op=replace(prod.op, activation="relu"), output=out, nodes=(*prod.nodes, node.name))
            self.layers[self.layers.index(prod)] = fused
            self.add_tensor(replace(self.tensors.pop(xname), name=out), fused)
            return
        why = "a requantizing ReLU: its producer has other readers, an activation, or another quantization"
        self.host_layer(HostLayer(node.name, "Relu", (xname,), {}, {}, (out,),
                                  host_ops.requantize_relu((xq.scale, xq.zero_point), yq.host()), why=why),
                        self.shape(node, xname), yq)

    def host_layer(self, layer: HostLayer, shape: tuple[int, ...], q: Quant) -> None:
        self.layers.append(layer)
        self.add_tensor(TensorInfo(layer.outputs[0], shape, q.dtype, q.scale, zero_point=q.zero_point), layer)

    def accel(self, node: Any, op: Any, feeds: dict[str, Feed], consts: dict[str, np.ndarray], out: str,
              q: Quant, layout: str, shape: tuple[int, ...], repeat: int = 1) -> None:
        for f in feeds.values():
            if f.tensor not in self.tensors or self.tensors[f.tensor].dtype != "int8":
                raise self.fail(node, f"input {f.tensor!r} is not an int8 tensor of the network")
        check_bytes(f"node {node.name!r} ({node.op_type}): output {out!r}", shape, q.dtype)
        layer = AccelLayer(node.name, op, feeds, consts, out, repeat, (node.name,))
        self.layers.append(layer)
        self.add_tensor(TensorInfo(out, tuple(shape), q.dtype, q.scale, layout, q.zero_point), layer)
