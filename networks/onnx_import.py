"""Import an onnxruntime-quantized int8 ONNX model as a :class:`~networks.network.Network`.

Both forms ``onnxruntime.quantization.quantize_static`` writes are read:

* QOperator: QLinearConv, QLinearMatMul, QGemm, QLinearAdd and MaxPool on int8
  tensors map to accelerator ops directly.
* QDQ: a Conv, MatMul, Gemm, Add or MaxPool whose activations are DequantizeLinear
  outputs and whose output goes to a QuantizeLinear (with a Relu in between or not)
  is the same quantized op.

The requantization scale of a conv or matmul is onnxruntime's,
``float32(float32(x_scale) * float32(w_scale)) / float32(y_scale)``, applied by
the store unit as ``clip(rne(float32(acc) * scale))``: the same arithmetic as
onnxruntime's QLinearConv/QLinearMatMul, so those layers are bit-exact. A
DequantizeLinear -> Relu -> QuantizeLinear at the producer's own scale becomes
the producer's ReLU (exact); at another scale it runs on the host.

An Add of two quantized tensors is Gemmini's resadd: each operand enters the
accumulator through its mvin scale (``x_scale / y_scale`` times 2^k, rounded to
an integer there), and the store scales by 2^-k. onnxruntime rounds the float sum
once; the resadd rounds each operand to 2^-k first, so the two differ by one
where the exact sum lies within 2^-k of a rounding tie.

Everything else (GlobalAveragePool, Flatten/Reshape, Softmax, LayerNormalization,
Gelu, ... and the Quantize/DequantizeLinear around them) runs on the host in numpy
(:mod:`networks.host_ops`). What the accelerator cannot express is an error that
names the node and the reason.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from toolkit.conv.ops import conv2d, depthwise_conv2d
from toolkit.limits import MAX_DRAM_FOOTPRINT
from toolkit.gemm import matmul
from toolkit.maxpool import maxpool2d
from toolkit.resadd import resadd

from . import host_ops
from .network import AccelLayer, Feed, HostLayer, Network, TensorInfo, convert_layout, to_layout_shape

_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 6: "int32", 7: "int64", 9: "bool", 10: "float16", 11: "float64"}
_ACTIVATED = ("Conv", "MatMul", "Gemm", "Add")      # QDQ ops whose ReLU the store unit can apply
_TINY = float(np.finfo(np.float32).tiny)             # the smallest normal float32


def from_onnx(model: Any) -> Network:
    """A network from a quantized ONNX model: a path or an ``onnx.ModelProto``."""
    proto, name = _load(model)
    return _Importer(proto, name).build()


def _load(model: Any) -> tuple[Any, str]:
    import onnx
    from google.protobuf.message import DecodeError

    if isinstance(model, onnx.ModelProto):
        proto, name = model, model.graph.name or "model"
    elif isinstance(model, (str, Path)):
        path = Path(model)
        if not path.is_file():
            raise ValueError(f"model {str(model)!r} is not a file")
        try:
            proto = onnx.load(str(path))
        except onnx.checker.ValidationError as exc:   # its external data: missing, or outside its folder
            raise ValueError(f"model {path.name}: cannot load its external data: {exc}") from None
        except (DecodeError, ValueError, RuntimeError, OSError) as exc:
            raise ValueError(f"model {path.name}: cannot parse it as ONNX (truncated or not an ONNX file?): "
                             f"{exc}") from None
        name = path.stem
    else:
        raise ValueError(f"model must be a path or an onnx.ModelProto, got {type(model).__name__}")
    try:
        onnx.checker.check_model(proto)
    except Exception as exc:  # the checker raises several types; all mean the same to the user
        raise ValueError(f"model {name}: not a valid ONNX model (truncated file?): {exc}") from None
    try:
        proto = onnx.shape_inference.infer_shapes(proto, strict_mode=True)
    except Exception as exc:  # noqa: BLE001  (as above; its message names the node)
        raise ValueError(f"model {name}: its shapes or types do not fit together: {exc}") from None
    if not proto.graph.node:
        raise ValueError(f"model {name}: the graph has no nodes (truncated file?)")
    _check_onnxruntime_loads(proto, name)
    return proto, name


def _check_onnxruntime_loads(proto: Any, name: str) -> None:
    """onnxruntime is the reference every run is compared with: a model it refuses (duplicate node
    names, types its kernels do not take, ...) is refused here, with its reason."""
    from .ort_reference import session
    try:
        session(proto.SerializeToString(), optimize=False)
    except Exception as exc:  # noqa: BLE001  (onnxruntime's error types are its own, from its C++ core)
        reason = re.sub(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ", "", str(exc))
        raise ValueError(f"model {name}: onnxruntime refuses it: {reason}") from None


@dataclass
class _Pending:
    """A QDQ compute op seen in float, waiting for the QuantizeLinear that gives its output scale."""

    kind: str
    node: Any
    args: dict[str, Any]
    relu: bool = False


@dataclass
class _Importer:
    proto: Any
    name: str
    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    layers: list = field(default_factory=list)
    consts: dict[str, np.ndarray] = field(default_factory=dict)           # value (float once dequantized)
    qconsts: dict[str, tuple[np.ndarray, float]] = field(default_factory=dict)   # DQ of a constant: ints, scale
    views: dict[str, tuple[str, float]] = field(default_factory=dict)     # DQ of an activation: int8 tensor, scale
    pending: dict[str, _Pending] = field(default_factory=dict)
    asymmetric: dict[str, str] = field(default_factory=dict)              # DQ outputs with a zero point: why
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
            self.types[vi.name] = (_DTYPES.get(tt.elem_type, str(tt.elem_type)), dims)
        self.uses: dict[str, int] = {}
        for node in g.node:
            for t in node.input:
                self.uses[t] = self.uses.get(t, 0) + 1
        self.graph_outputs = tuple(o.name for o in g.output)

    # ---- helpers ---------------------------------------------------------------------------
    def fail(self, node: Any, reason: str) -> ValueError:
        return _NodeError(f"node {node.name!r} ({node.op_type}): {reason}")

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
        if not (math.isfinite(value) and value >= _TINY):
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

    def quant(self, node: Any, scale: str, zero_point: str | None, what: str,
              types: tuple[str, ...] = ("int8",)) -> float:
        """The one per-tensor scale of a (scale, zero point) pair; symmetric int8 only."""
        s, zp = self.quant_zp(node, scale, zero_point, what, types)
        if zp != 0:
            raise self.fail(node, f"{what} has zero point {zp} (asymmetric quantization): the accelerator's int8 "
                                  "arithmetic has no zero points; quantize with ActivationSymmetric=True and "
                                  "WeightSymmetric=True")
        return s

    def quant_zp(self, node: Any, scale: str, zero_point: str | None, what: str,
                 types: tuple[str, ...] = ("int8",)) -> tuple[float, int]:
        """(scale, zero point) of a per-tensor int8 quantization; host ops accept zero points."""
        if scale not in self.consts:
            raise self.fail(node, f"the scale of {what} ({scale!r}) is not a constant")
        s = np.asarray(self.consts[scale], dtype=np.float32).ravel()
        if s.size > 1 and np.any(s != s[0]):
            raise self.fail(node, f"{what} has per-channel scales ({s.size} different values): the accelerator "
                                  "applies one scale per tensor; quantize with per_channel=False")
        zp = np.zeros(1, np.int8)
        if zero_point:
            if zero_point not in self.consts:
                raise self.fail(node, f"the zero point of {what} ({zero_point!r}) is not a constant")
            zp = np.asarray(self.consts[zero_point]).ravel()
            if str(zp.dtype) not in types:
                raise self.fail(node, f"{what} is {zp.dtype}, not {'/'.join(types)}: the accelerator computes on "
                                      "symmetric int8 (quantize with QuantType.QInt8)")
            if zp.size > 1 and np.any(zp != zp[0]):
                raise self.fail(node, f"{what} has per-channel zero points")
        elif "int32" not in types:
            raise self.fail(node, f"{what} has no zero point, so it is uint8: the accelerator computes on "
                                  "symmetric int8")
        return self.normal(node, f"the scale of {what}", float(s[0])), int(zp[0])

    def activation(self, node: Any, tensor: str, what: str) -> tuple[str, float]:
        """(int8 tensor, scale) of a QDQ activation input (a DequantizeLinear output)."""
        if tensor in self.views:
            return self.views[tensor]
        if tensor in self.asymmetric:
            raise self.fail(node, f"{what} {tensor!r}: {self.asymmetric[tensor]} (asymmetric quantization): the "
                                  "accelerator's int8 arithmetic has no zero points; quantize with "
                                  "ActivationSymmetric=True")
        if tensor in self.pending:
            raise self.fail(node, f"{what} {tensor!r} is the float output of {self.pending[tensor].node.name!r}, "
                                  "not requantized: only a QuantizeLinear (or Relu then QuantizeLinear) may follow it")
        raise self.fail(node, f"{what} {tensor!r} is a float tensor, not a DequantizeLinear output: the model is "
                              "not quantized (quantize it with onnxruntime.quantization.quantize_static, int8 "
                              "symmetric)")

    def qconst(self, node: Any, tensor: str, what: str) -> tuple[np.ndarray, float]:
        if tensor in self.qconsts:
            return self.qconsts[tensor]
        raise self.fail(node, f"{what} {tensor!r} is not a quantized constant (a DequantizeLinear of an int "
                              "initializer): the model is not quantized")

    def operand(self, node: Any, tensor: str, what: str) -> tuple[Any, float, bool]:
        """(tensor name or constant ints, scale, is_constant) of a QDQ operand."""
        if tensor in self.qconsts:
            return (*self.qconsts[tensor], True)
        return (*self.activation(node, tensor, what), False)

    # ---- build -------------------------------------------------------------------------------
    def build(self) -> Network:
        g = self.proto.graph
        inputs = {}
        for vi in g.input:
            if vi.name in self.consts:
                continue
            dtype, dims = self.types[vi.name]
            what = f"graph input {vi.name!r}"
            if dims is None or any(d is None for d in dims):
                shown = [d.dim_param or (d.dim_value or "?") for d in vi.type.tensor_type.shape.dim]
                raise ValueError(f"{what} has a dynamic shape {shown}: the accelerator's programs "
                                 "are compiled for fixed sizes; give every dimension a number")
            if 0 in dims:
                raise ValueError(f"{what} has a zero-size dimension {list(dims)}: it holds no data to compute on")
            _check_bytes(what, dims, dtype)
            inputs[vi.name] = TensorInfo(vi.name, dims, dtype)
            self.add_tensor(inputs[vi.name], None)
        for index, node in enumerate(g.node):
            if not node.name:
                node.name = f"{node.op_type}_{index}"
            try:
                self.dispatch(node)
            except _NodeError:
                raise
            except (ValueError, TypeError, IndexError, KeyError) as exc:   # a check still missing: name the node
                raise self.fail(node, str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
                                ) from None
        for out in self.graph_outputs:
            if out in self.pending:
                raise ValueError(f"graph output {out!r} is the float output of {self.pending[out].node.name!r} "
                                 "with no QuantizeLinear: the model is not quantized")
            if out not in self.tensors:
                raise ValueError(f"graph output {out!r} is a constant or is not computed by the graph")
        return Network(self.name, inputs, self.graph_outputs, self.tensors, self._live_layers(), self.proto)

    def dispatch(self, node: Any) -> None:
        handler = getattr(self, f"on_{node.op_type}", None)
        if handler is not None:
            handler(node)
        elif node.op_type in host_ops.QLINEAR_OPS:
            self.qlinear_host(node)
        elif node.op_type in host_ops.FLOAT_OPS:
            self.host(node, host_ops.FLOAT_OPS[node.op_type])
        else:
            raise self.fail(node, "no accelerator op and no host implementation for this op type "
                                  f"(host ops: {', '.join(host_ops.HOST_OP_TYPES)})")

    def _live_layers(self) -> list:
        """Layers some graph output depends on, in order (drops DequantizeLinears the accelerator ops read
        through, and folded producers)."""
        needed = set(self.graph_outputs)
        live = []
        for layer in reversed(self.layers):
            if any(o in needed for o in layer.outputs):
                live.append(layer)
                needed.update(layer.tensor_inputs())
        return live[::-1]

    # ---- host ops ------------------------------------------------------------------------------
    def host(self, node: Any, fn: Any, scale: float | None = None, dtype: str | None = None,
             zero_point: int = 0) -> HostLayer:
        """A host layer for ``node``; outputs of layout ops on int8 keep the input's scale."""
        names: list[str | None] = []
        constants = {}
        for i, t in enumerate(node.input):
            if t == "":
                names.append(None)
                constants[i] = None
            elif t in self.consts:
                names.append(None)
                constants[i] = self.consts[t]
            elif t in self.tensors:
                names.append(t)
            else:
                self.activation(node, t, "input")   # raises the reason
        attrs = _attrs(node)
        first = self.tensors.get(names[0]) if names and names[0] else None
        if scale is None and node.op_type in host_ops.LAYOUT_OPS and first is not None:
            scale, zero_point = first.scale, first.zero_point
        layer = HostLayer(node.name, node.op_type, tuple(names), constants, attrs, tuple(node.output), fn)
        for out in node.output:   # by size first where inference knows it: the dry run allocates the outputs
            dtype_out, dims = self.types.get(out, (None, None))
            if dims is not None and None not in dims:
                _check_bytes(f"node {node.name!r} ({node.op_type}): output {out!r}", dims, dtype or dtype_out)
        # shapes by a dry run on zeros: onnx's inference does not know onnxruntime's QLinear* ops
        with np.errstate(all="ignore"):
            dry = fn([constants[i] if t is None else np.zeros(self.tensors[t].shape, self.tensors[t].dtype)
                      for i, t in enumerate(names)], attrs)
        for out, value in zip(node.output, dry):
            out_dtype = dtype or str(np.asarray(value).dtype)
            self.add_tensor(TensorInfo(out, tuple(np.shape(value)), out_dtype, scale, zero_point=zero_point), layer)
        self.layers.append(layer)
        return layer

    def qlinear_host(self, node: Any) -> None:
        op_type, n = host_ops.QLINEAR_OPS[node.op_type]
        ins = list(node.input)
        in_q = [self.quant_zp(node, ins[3 * i + 1], ins[3 * i + 2], f"input {i}") for i in range(n)]
        out_q = self.quant_zp(node, ins[3 * n], ins[3 * n + 1] if len(ins) > 3 * n + 1 else None, "the output")
        stripped = type(node)()
        stripped.CopyFrom(node)
        del stripped.input[:]
        stripped.input.extend(ins[3 * i] for i in range(n))
        self.host(stripped, host_ops.qlinear(node.op_type, in_q, out_q), out_q[0], "int8", out_q[1])

    def on_Constant(self, node: Any) -> None:
        from onnx import helper, numpy_helper
        value = helper.get_attribute_value(node.attribute[0])
        self.consts[node.output[0]] = numpy_helper.to_array(value) if hasattr(value, "dims") else np.asarray(value)

    def on_DequantizeLinear(self, node: Any) -> None:
        x, out = node.input[0], node.output[0]
        zp = node.input[2] if len(node.input) > 2 else None
        if x in self.consts:
            data = self.consts[x]
            dtype = str(data.dtype)
            s = self.quant(node, node.input[1], zp, f"constant {x!r}", ("int8", "int32") if dtype == "int32"
                           else ("int8",))
            self.qconsts[out] = (data, s)
            self.consts[out] = host_ops.dequantize(data, s)
            return
        s, z = self.quant_zp(node, node.input[1], zp, f"tensor {x!r}")
        if z == 0:
            self.views[out] = (x, s)
        else:
            self.asymmetric[out] = f"tensor {x!r} has zero point {z}"
        self.host(node, lambda inputs, attrs: [host_ops.dequantize(inputs[0], s, z)], dtype="float32")

    def on_QuantizeLinear(self, node: Any) -> None:
        x, out = node.input[0], node.output[0]
        zp = node.input[2] if len(node.input) > 2 else None
        if x in self.pending:
            self.finish(self.pending.pop(x), out, self.quant(node, node.input[1], zp, f"output {out!r}"), node)
            return
        s, z = self.quant_zp(node, node.input[1], zp, f"output {out!r}")
        if x in self.consts:
            self.consts[out] = host_ops.quantize(self.consts[x], s, z)
        else:
            self.host(node, lambda inputs, attrs: [host_ops.quantize(inputs[0], s, z)], s, "int8", z)

    # ---- QDQ compute ops (float between DequantizeLinear and QuantizeLinear) --------------------
    def on_Conv(self, node: Any) -> None:
        x = self.activation(node, node.input[0], "input")
        w = self.qconst(node, node.input[1], "weight")
        b = self.qconst(node, node.input[2], "bias") if len(node.input) > 2 and node.input[2] else None
        self.pending[node.output[0]] = _Pending("conv", node, dict(x=x, w=w, b=b))

    def on_MatMul(self, node: Any) -> None:
        a = self.activation(node, node.input[0], "input A")
        b = self.operand(node, node.input[1], "input B")
        self.pending[node.output[0]] = _Pending("matmul", node, dict(a=a, b=b, bias=None))

    def on_Gemm(self, node: Any) -> None:
        a = self.activation(node, node.input[0], "input A")
        b = self.qconst(node, node.input[1], "weight B")
        bias = self.qconst(node, node.input[2], "bias C") if len(node.input) > 2 and node.input[2] else None
        self.pending[node.output[0]] = _Pending("matmul", node, dict(a=a, b=(*b, True), bias=bias))

    def on_Add(self, node: Any) -> None:
        a, b = node.input
        if all(t in self.views or t in self.qconsts for t in (a, b)) and not all(t in self.qconsts for t in (a, b)):
            self.pending[node.output[0]] = _Pending("add", node, dict(a=self.operand(node, a, "input A"),
                                                                      b=self.operand(node, b, "input B")))
        else:
            self.host(node, host_ops.FLOAT_OPS["Add"])

    def on_MaxPool(self, node: Any) -> None:
        x = node.input[0]
        if x in self.views:
            self.pending[node.output[0]] = _Pending("maxpool", node, dict(x=self.views[x]))
        elif x in self.tensors and self.tensors[x].dtype == "int8":      # QOperator: MaxPool on int8
            s = self.tensors[x].scale
            self.maxpool(node, (x, s), node.output[0], s)
        else:
            self.activation(node, x, "input")   # raises the reason

    def on_Relu(self, node: Any) -> None:
        x, out = node.input[0], node.output[0]
        if x in self.pending and self.pending[x].node.op_type in _ACTIVATED and not self.pending[x].relu:
            self.pending[out] = replace(self.pending.pop(x), relu=True)
        elif x in self.views:
            self.pending[out] = _Pending("relu", node, dict(x=self.views[x], dq=x))
        else:
            self.host(node, host_ops.FLOAT_OPS["Relu"])

    def finish(self, p: _Pending, out: str, scale: float, qnode: Any) -> None:
        a = p.args
        if p.kind == "conv":
            self.conv(p.node, a["x"], a["w"], a["b"], out, scale, p.relu)
        elif p.kind == "matmul":
            self.matmul(p.node, a["a"], a["b"], a["bias"], out, scale, p.relu, p.node.op_type == "Gemm")
        elif p.kind == "add":
            self.resadd(p.node, a["a"], a["b"], out, scale, p.relu)
        elif p.kind == "maxpool":
            self.maxpool(p.node, a["x"], out, scale)
        else:
            self.relu(p.node, a["x"], a["dq"], out, scale)

    # ---- QOperator compute ops ---------------------------------------------------------------------
    def on_QLinearConv(self, node: Any) -> None:
        i = list(node.input)
        xs = self.quant(node, i[1], i[2], "input")
        ws = self.quant(node, i[4], i[5], "weight")
        ys = self.quant(node, i[6], i[7], "output")
        b = (self.consts[i[8]], xs * ws) if len(i) > 8 and i[8] else None
        self.conv(node, (i[0], xs), (self._const(node, i[3], "weight"), ws), b, node.output[0], ys, False)

    def on_QLinearMatMul(self, node: Any) -> None:
        i = list(node.input)
        a = (i[0], self.quant(node, i[1], i[2], "input A"))
        bs = self.quant(node, i[4], i[5], "input B")
        b = (self.consts[i[3]], bs, True) if i[3] in self.consts else (i[3], bs, False)
        self.matmul(node, a, b, None, node.output[0], self.quant(node, i[6], i[7], "output"), False, False)

    def on_QGemm(self, node: Any) -> None:
        i = list(node.input)
        if len(i) < 8 or not i[7]:
            raise self.fail(node, "QGemm with a float output (no y_scale) is not supported")
        a = (i[0], self.quant(node, i[1], i[2], "input A"))
        bs = self.quant(node, i[4], i[5], "weight B")
        b = (self._const(node, i[3], "weight B"), bs, True)
        bias = (self.consts[i[6]], a[1] * bs) if i[6] else None
        self.matmul(node, a, b, bias, node.output[0], self.quant(node, i[7], i[8] if len(i) > 8 else None,
                                                                 "output"), False, True)

    def on_QLinearAdd(self, node: Any) -> None:
        i = list(node.input)
        ops = []
        for k, what in ((0, "input A"), (3, "input B")):
            s = self.quant(node, i[k + 1], i[k + 2], what)
            ops.append((self.consts[i[k]], s, True) if i[k] in self.consts else (i[k], s, False))
        self.resadd(node, ops[0], ops[1], node.output[0], self.quant(node, i[6], i[7], "output"), False)

    def _const(self, node: Any, tensor: str, what: str) -> np.ndarray:
        if tensor not in self.consts:
            raise self.fail(node, f"{what} {tensor!r} is not a constant")
        return self.consts[tensor]

    # ---- layer builders ----------------------------------------------------------------------------
    def _window(self, node: Any) -> tuple[int, int]:
        """(stride, padding) of a Conv/MaxPool, or the reason the accelerator cannot run it."""
        attrs = _attrs(node)
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

    def conv(self, node: Any, x: tuple[str, float], w: tuple[np.ndarray, float], b: Any, out: str,
             ys: float, relu: bool) -> None:
        (xq, xs), (weight, ws) = x, w
        if weight.dtype != np.int8:
            raise self.fail(node, f"weight is {weight.dtype}, not int8")
        n, c, h, wd = self.nchw(node, xq)
        if weight.ndim != 4:
            raise self.fail(node, f"weight is {weight.shape}, not K x C x KH x KW: the accelerator's convs are 2-D")
        k, cg, kh, kw = weight.shape
        stride, pad = self._window(node)
        group = _attrs(node).get("group", 1)
        if cg * group != c:
            raise self.fail(node, f"weight {weight.shape} with group={group} takes {cg * group} input channels, "
                                  f"the input {xq!r} has {c}")
        scale = self.normal(node, "the requantization scale x_scale * w_scale / y_scale", _requant_scale(xs, ws, ys))
        bias = None
        if b is not None:
            bias, bs = b
            if bias.dtype != np.int32 or not math.isclose(bs, float(np.float32(xs) * np.float32(ws)), rel_tol=1e-5):
                raise self.fail(node, f"bias is {bias.dtype} with scale {bs}: the accelerator adds an int32 bias "
                                      f"at input scale x weight scale ({xs * ws})")
            if bias.shape != (k,):
                raise self.fail(node, f"bias is {bias.shape}: the conv has {k} output channels, one bias each")
        epi = dict(bias="channel" if bias is not None else None, activation="relu" if relu else "none", scale=scale)
        if group == 1:
            op = conv2d(n, h, wd, c, k, kernel=(kh, kw), stride=stride, padding=pad, **epi)
            wq = np.ascontiguousarray(weight.transpose(2, 3, 1, 0))
        elif group == c == k and cg == 1:
            op = depthwise_conv2d(n, h, wd, c, kernel=(kh, kw), stride=stride, padding=pad, **epi)
            wq = np.ascontiguousarray(weight[:, 0].transpose(1, 2, 0))
        else:
            raise self.fail(node, f"group={group} with {c} input and {k} output channels: only group=1 and "
                                  "depthwise (group = channels) convs map to the accelerator")
        consts = {"weight": wq} if bias is None else {"weight": wq, "bias": bias.astype(np.int32)}
        self.accel(node, op, {"input": Feed(xq, "nhwc", (n, h, wd, c))}, consts, out, ys, "nhwc",
                   (n, k, op.out_h, op.out_w))

    def matmul(self, node: Any, a: tuple[str, float], b: tuple, bias: Any, out: str, ys: float, relu: bool,
               gemm: bool) -> None:
        (aq, as_), (bv, bs, b_const) = a, b
        attrs = _attrs(node)
        if gemm and (attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0):
            raise self.fail(node, "Gemm with transA=1, alpha != 1 or beta != 1 is not supported")
        ashape = self.shape(node, aq)
        feeds, repeat = {}, 1
        if b_const:
            w = bv.T if attrs.get("transB", 0) else bv
            if w.ndim != 2 or w.dtype != np.int8:
                raise self.fail(node, f"constant B must be a 2-D int8 matrix, got {w.dtype} {w.shape}")
            k_, n_ = w.shape
            if ashape[-1:] != (k_,):
                raise self.fail(node, f"A {ashape} @ B {w.shape}: A's columns and B's rows differ")
            m_ = int(np.prod(ashape[:-1]))
            feeds["A"] = Feed(aq, "native", (m_, k_))
            consts = {"B": np.ascontiguousarray(w)}
        else:
            bshape = self.shape(node, bv)
            if len(ashape) != len(bshape) or ashape[:-2] != bshape[:-2] or len(ashape) < 2:
                raise self.fail(node, f"A {ashape} @ B {bshape}: batched matmuls need equal batch dimensions")
            if ashape[-1] != bshape[-2]:
                raise self.fail(node, f"A {ashape} @ B {bshape}: A's columns and B's rows differ")
            repeat = int(np.prod(ashape[:-2]))
            m_, k_, n_ = ashape[-2], ashape[-1], bshape[-1]
            lead = (repeat,) if repeat > 1 else ()
            feeds["A"] = Feed(aq, "native", (*lead, m_, k_), repeat > 1)
            feeds["B"] = Feed(bv, "native", (*lead, k_, n_), repeat > 1)
            consts = {}
        bias_kind = None
        if bias is not None:
            bvals, bscale = bias
            if bvals.dtype != np.int32 or bvals.size != n_:
                raise self.fail(node, f"bias C must be {n_} int32 values, got {bvals.dtype} {bvals.shape}")
            consts["bias"] = bvals.reshape(n_).astype(np.int32)
            bias_kind = "row"
        op = matmul(m_, n_, k_, bias=bias_kind, activation="relu" if relu else "none",
                    scale=self.normal(node, "the requantization scale a_scale * b_scale / y_scale",
                                      _requant_scale(as_, bs, ys)))
        out_shape = (*ashape[:-1], n_)
        self.accel(node, op, feeds, consts, out, ys, "native", out_shape, repeat)

    def resadd(self, node: Any, a: tuple, b: tuple, out: str, ys: float, relu: bool) -> None:
        if a[2] and b[2]:
            raise self.fail(node, "both operands are constants")
        if a[2]:
            a, b = b, a
        shape = self.shape(node, a[0])
        other = b[0].shape if b[2] else self.shape(node, b[0])
        if other != shape and not (b[2] and _broadcasts(other, shape)):
            raise self.fail(node, f"operands {shape} and {other}: the resadd needs equal shapes (or a constant "
                                  "that broadcasts to the activation's)")
        nhwc = len(shape) == 4 and any(not o[2] and self.tensors[o[0]].layout == "nhwc" for o in (a, b))
        layout = "nhwc" if nhwc else "native"
        op_shape = to_layout_shape(shape, layout) if nhwc else (1, 1, int(np.prod(shape[:-1])), shape[-1] if shape else 1)
        ra, rb = (self.normal(node, f"the scale ratio {which}_scale / y_scale", _ratio(o[1], ys))
                  for which, o in (("a", a), ("b", b)))
        # operands enter the accumulator scaled by 2^k, so each is rounded to 2^-k of an output step
        k = int(min(40, max(0, math.floor(math.log2(2 ** 13 / (ra + rb))))))
        op = resadd(*op_shape, a_scale=ra * 2 ** k, b_scale=rb * 2 ** k, activation="relu" if relu else "none",
                       scale=2.0 ** -k)
        feeds = {"A": Feed(a[0], layout, op_shape)}
        consts = {}
        if b[2]:
            if b[0].dtype != np.int8:
                raise self.fail(node, f"constant operand is {b[0].dtype}, not int8")
            full = np.broadcast_to(b[0], shape)
            consts["B"] = np.ascontiguousarray(convert_layout(np.ascontiguousarray(full), "native", layout)
                                               .reshape(op_shape))
        else:
            feeds["B"] = Feed(b[0], layout, op_shape)
        self.accel(node, op, feeds, consts, out, ys, layout, shape)

    def maxpool(self, node: Any, x: tuple[str, float], out: str, ys: float) -> None:
        xq, xs = x
        n, c, h, w = self.nchw(node, xq)
        kernel = tuple(_attrs(node)["kernel_shape"])
        stride, pad = self._window(node)
        op = maxpool2d(n, h, w, c, kernel=kernel, stride=stride, padding=pad)
        shape = (n, c, op.out_h, op.out_w)
        if ys == xs:
            self.accel(node, op, {"input": Feed(xq, "nhwc", (n, h, w, c))}, {}, out, xs, "nhwc", shape)
            return
        mid = f"{out}__max"            # max at the input's scale, then requantized on the host
        self.accel(node, op, {"input": Feed(xq, "nhwc", (n, h, w, c))}, {}, mid, xs, "nhwc", shape)
        layer = HostLayer(f"{node.name}_requantize", "Requantize", (mid,), {}, {}, (out,),
                          host_ops.requantize(xs, ys))
        self.layers.append(layer)
        self.add_tensor(TensorInfo(out, shape, "int8", ys), layer)

    def relu(self, node: Any, x: tuple[str, float], dq: str, out: str, ys: float) -> None:
        """DequantizeLinear -> Relu -> QuantizeLinear: the producer's ReLU when nothing else reads its output
        and the scale stays, else a requantizing ReLU on the host."""
        xq, xs = x
        prod = self.producer.get(xq)
        fusable = (isinstance(prod, AccelLayer) and ys == xs and getattr(prod.op, "activation", "") == "none"
                   and self.uses.get(xq, 0) == 1 and self.uses.get(dq, 0) == 1 and xq not in self.graph_outputs
                   and prod.op.KIND != "maxpool")
        if fusable:
            fused = replace(prod, op=replace(prod.op, activation="relu"), output=out, nodes=(*prod.nodes, node.name))
            self.layers[self.layers.index(prod)] = fused
            self.add_tensor(replace(self.tensors.pop(xq), name=out), fused)
            return
        layer = HostLayer(node.name, "Relu", (xq,), {}, {}, (out,), host_ops.requantize_relu(xs, ys))
        self.layers.append(layer)
        self.add_tensor(TensorInfo(out, self.shape(node, xq), "int8", ys), layer)

    def accel(self, node: Any, op: Any, feeds: dict[str, Feed], consts: dict[str, np.ndarray], out: str,
              scale: float, layout: str, shape: tuple[int, ...], repeat: int = 1) -> None:
        for f in feeds.values():
            if f.tensor not in self.tensors or self.tensors[f.tensor].dtype != "int8":
                raise self.fail(node, f"input {f.tensor!r} is not an int8 tensor of the network")
            if self.tensors[f.tensor].zero_point:
                raise self.fail(node, f"input {f.tensor!r} has zero point {self.tensors[f.tensor].zero_point} "
                                      "(asymmetric quantization): the accelerator's int8 arithmetic has none")
        _check_bytes(f"node {node.name!r} ({node.op_type}): output {out!r}", shape, "int8")
        layer = AccelLayer(node.name, op, feeds, consts, out, repeat, (node.name,))
        self.layers.append(layer)
        self.add_tensor(TensorInfo(out, tuple(shape), "int8", scale, layout), layer)


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _requant_scale(x_scale: float, w_scale: float, y_scale: float) -> float:
    """onnxruntime's output multiplier for QLinearConv/QLinearMatMul, in float32 as it computes it."""
    with np.errstate(all="ignore"):   # under- and overflow show in the value, which the caller checks
        return _ratio(np.float32(x_scale) * np.float32(w_scale), y_scale)


def _ratio(num: float, den: float) -> float:
    """float32(num) / float32(den), as onnxruntime divides scales (its callers check the value)."""
    with np.errstate(all="ignore"):
        return float(np.float32(num) / np.float32(den))


def _broadcasts(small: tuple[int, ...], big: tuple[int, ...]) -> bool:
    try:
        return np.broadcast_shapes(small, big) == big
    except ValueError:
        return False


def _check_bytes(what: str, shape: tuple[int, ...], dtype: str | None) -> None:
    """Refuse by size, before anything allocates it, a tensor no run could hold."""
    size = math.prod(shape) * np.dtype(dtype if dtype in _DTYPES.values() else "float32").itemsize
    if size > MAX_DRAM_FOOTPRINT:
        raise ValueError(f"{what} is {' x '.join(map(str, shape))} {dtype}: {size:,} bytes, more than the "
                         f"{MAX_DRAM_FOOTPRINT:,} a tensor of a network may take")


class _NodeError(ValueError):
    """An import error that names its node."""
