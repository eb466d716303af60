"""Import an onnxruntime-quantized ONNX model (int8 or uint8, zero points or not, per-channel weight scales or
not) as a :class:`~networks.network.Network`.

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

Zero points, uint8 and per-channel scales (the store unit has none of them): the input zero point folds
into int32 (``-zx * sum(w)``, over the taps inside the input at a padded conv's borders; uint8 is read as
int8 ``x - 128`` with its zero point 128 lower); where the output is symmetric int8 per tensor this joins
the bias, else the layer writes int32 and a host epilogue requantizes as onnxruntime does (see
:func:`_Importer.gemm_layer`). Weights whose ``w - zw`` leaves int8 and matmuls of two activations with
zero points: the accelerator multiplies int8 operands, and the zero points' shares that depend on the data
(a weight shift times each output's input sum; the row and column sums of a matmul of activations) are
terms the epilogue adds in int32 (:class:`_Shares`). An Add with zero points runs on the host as QLinearAdd.

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

from isa import HardwareConfig
from toolkit.conv.ops import conv2d, depthwise_conv2d
from toolkit.limits import MAX_DRAM_FOOTPRINT
from toolkit.gemm import matmul
from toolkit.maxpool import maxpool2d
from toolkit.maxpool.tiles import store_can_pool
from toolkit.resadd import resadd

from . import host_ops
from .network import AccelLayer, Feed, HostLayer, Network, TensorInfo, convert_layout, to_layout_shape

_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 6: "int32", 7: "int64", 9: "bool", 10: "float16", 11: "float64"}
_ACTIVATED = ("Conv", "MatMul", "Gemm", "Add")      # QDQ ops whose ReLU the store unit can apply
_TINY = float(np.finfo(np.float32).tiny)             # the smallest normal float32


def from_onnx(model: Any, *, fuse_pool: bool = False, hw: HardwareConfig | str | None = None) -> Network:
    """A network from a quantized ONNX model: a path or an ``onnx.ModelProto``.

    ``hw``: the hardware the network is meant for (a config, a preset name or a TOML path). Where its store
    unit has the requantization extension (``store_requant``), a conv or matmul whose output has a zero point
    or is uint8 (one scale per tensor) requantizes in the store unit instead of a ``host:Requantize``
    epilogue; such a network then runs only on hardware with the extension. Where it has the column-scale
    extension (``store_col_scales``), a conv or matmul with per-channel weight scales requantizes in the
    store unit too, its scale one per output channel (such a conv does not fuse a following max pool).

    ``fuse_pool=True`` folds each Conv -> (Relu) -> MaxPool into the conv's store unit (no DRAM round trip).
    It is off by default because it is slower today: a pooled conv runs under Gemmini's library tiling (the
    toolkit's own conv tiles do not pool), and ResNet-50's stem measured 1,814,643 cycles fused against
    848,043 for conv1 and the store-unit pool apart (benchmarks/bench_pool.py, gemmini preset, RTL)."""
    if not isinstance(fuse_pool, bool):
        raise ValueError(f"fuse_pool={fuse_pool!r} must be true or false")
    hw = None if hw is None else HardwareConfig.resolve(hw)
    proto, name = _load(model)
    return _Importer(proto, name, fuse_pool, hw is not None and hw.store_requant,
                     hw is not None and hw.store_col_scales).build()


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


@dataclass(frozen=True)
class _Q:
    """A quantization: scale (a float, or a float32 vector for per-channel weights), zero point (likewise),
    integer type."""

    scale: Any
    zero_point: Any = 0
    dtype: str = "int8"

    @property
    def per_tensor(self) -> bool:
        return np.ndim(self.scale) == 0 and np.ndim(self.zero_point) == 0

    @property
    def plain(self) -> bool:
        """Symmetric int8 per tensor: what the accelerator's store unit requantizes to."""
        return self.per_tensor and self.zero_point == 0 and self.dtype == "int8"

    def host(self) -> tuple[float, int, str]:
        return self.scale, self.zero_point, self.dtype


@dataclass(frozen=True)
class _Shares:
    """The zero points' share of each int32 sum of a conv or matmul, beyond what the accelerator's int8 operands
    compute: a constant ``offset`` (int64, broadcasting to the sums in ONNX layout) and ``terms``, (int8 input
    tensor, its :data:`host_ops.Term`) pairs that depend on the data."""

    offset: np.ndarray
    terms: tuple[tuple[str, host_ops.Term], ...] = ()


@dataclass(frozen=True)
class _FloatBias:
    """A bias quantize_static left in float (``QuantizeBias=False``): onnxruntime adds it to the conv or matmul's
    float output, the int32 sums times ``in_scale`` (x_scale * w_scale, one or one per output channel)."""

    values: np.ndarray
    in_scale: Any


@dataclass
class _Importer:
    proto: Any
    name: str
    fuse_pool: bool
    store_requant: bool   # the store unit adds an output zero point and clips to uint8
    store_col_scales: bool = False   # the store unit scales each output channel by its own scale
    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    layers: list = field(default_factory=list)
    consts: dict[str, np.ndarray] = field(default_factory=dict)           # value (float once dequantized)
    qconsts: dict[str, tuple[np.ndarray, "_Q", int]] = field(default_factory=dict)   # DQ of a constant: ints, q, axis
    views: dict[str, tuple[str, "_Q"]] = field(default_factory=dict)     # DQ of an activation: int tensor, q
    pending: dict[str, _Pending] = field(default_factory=dict)
    quantized: dict[str, tuple[str, "_Q"]] = field(default_factory=dict)   # finished float output -> its Q output
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

    def qparams(self, node: Any, scale: str, zero_point: str | None, what: str, data_dtype: str | None = None,
                per_channel: bool = False, types: tuple[str, ...] = ("int8", "uint8")) -> _Q:
        """A (scale, zero point, type) input pair of a node; one per channel only where ``per_channel``
        (constants: weights and biases)."""
        if scale not in self.consts:
            raise self.fail(node, f"the scale of {what} ({scale!r}) is not a constant")
        s = np.asarray(self.consts[scale], dtype=np.float32).ravel()
        if zero_point:
            if zero_point not in self.consts:
                raise self.fail(node, f"the zero point of {what} ({zero_point!r}) is not a constant")
            zp = np.asarray(self.consts[zero_point]).ravel()
            dtype = str(zp.dtype)
        else:
            zp, dtype = np.zeros(1, np.int64), data_dtype or "uint8"    # ONNX: no zero point means uint8
        if dtype not in types:
            raise self.fail(node, f"{what} is {dtype}, not {'/'.join(types)}: the accelerator computes on 8-bit "
                                  "integers (quantize with QuantType.QInt8 or QUInt8)")
        for v in s:
            self.normal(node, f"the scale of {what}", float(v))
        if not per_channel:
            if not _uniform(s):
                raise self.fail(node, f"{what} has per-channel scales ({s.size} different values): an activation "
                                      "has one scale")
            if not _uniform(zp):
                raise self.fail(node, f"{what} has per-channel zero points: an activation has one zero point")
        return _Q(float(s[0]) if _uniform(s) else s, int(zp[0]) if _uniform(zp) else zp.astype(np.int64), dtype)

    def activation(self, node: Any, tensor: str, what: str) -> tuple[str, _Q]:
        """(integer tensor, quantization) of a QDQ activation input (a DequantizeLinear output)."""
        if tensor in self.views:
            return self.views[tensor]
        if tensor in self.pending:
            raise self.fail(node, f"{what} {tensor!r} is the float output of {self.pending[tensor].node.name!r}, "
                                  "not requantized: only a QuantizeLinear (or Relu then QuantizeLinear) may follow it")
        raise self.fail(node, f"{what} {tensor!r} is a float tensor, not a DequantizeLinear output: the model is "
                              "not quantized (quantize it with onnxruntime.quantization.quantize_static)")

    def qconst(self, node: Any, tensor: str, what: str) -> tuple[np.ndarray, _Q, int]:
        """(integers, quantization, channel axis) of a DequantizeLinear of a constant."""
        if tensor in self.qconsts:
            return self.qconsts[tensor]
        raise self.fail(node, f"{what} {tensor!r} is not a quantized constant (a DequantizeLinear of an int "
                              "initializer): the model is not quantized")

    def operand(self, node: Any, tensor: str, what: str) -> tuple[Any, _Q, bool]:
        """(tensor name or constant ints, quantization, is_constant) of a QDQ operand."""
        if tensor in self.qconsts:
            data, q, _ = self.qconsts[tensor]
            if not q.per_tensor:
                raise self.fail(node, f"{what} {tensor!r} has per-channel scales: only weights may")
            return data, q, True
        return (*self.activation(node, tensor, what), False)

    def weight(self, node: Any, w: tuple[np.ndarray, _Q, int], out_axis: int) -> tuple[np.ndarray, Any, np.ndarray]:
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
        exact = data.astype(np.int64) - _along(zw, out_axis, data.ndim)
        fits = (exact.min(axis=others, initial=0) >= -128) & (exact.max(axis=others, initial=0) <= 127)
        shift = np.where(fits, 0, (128 if data.dtype == np.uint8 else 0) - zw)
        ints = exact - _along(shift, out_axis, data.ndim)
        return ints.astype(np.int8), q.scale, shift

    def int8_input(self, x: str, q: _Q) -> tuple[str, int]:
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
            elif t in self.pending:
                self.flush(t)
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
        in_q = [self.qparams(node, ins[3 * i + 1], ins[3 * i + 2], f"input {i}") for i in range(n)]
        out_q = self.qparams(node, ins[3 * n], ins[3 * n + 1] if len(ins) > 3 * n + 1 else None, "the output")
        stripped = type(node)()
        stripped.CopyFrom(node)
        del stripped.input[:]
        stripped.input.extend(ins[3 * i] for i in range(n))
        self.host(stripped, host_ops.qlinear(node.op_type, [(q.scale, q.zero_point) for q in in_q], out_q.host()),
                  out_q.scale, out_q.dtype, out_q.zero_point)

    def on_Constant(self, node: Any) -> None:
        from onnx import helper, numpy_helper
        value = helper.get_attribute_value(node.attribute[0])
        self.consts[node.output[0]] = numpy_helper.to_array(value) if hasattr(value, "dims") else np.asarray(value)

    def on_DequantizeLinear(self, node: Any) -> None:
        x, out = node.input[0], node.output[0]
        zp = node.input[2] if len(node.input) > 2 else None
        if x in self.consts:
            data = self.consts[x]
            q = self.qparams(node, node.input[1], zp, f"constant {x!r}", str(data.dtype), per_channel=True,
                             types=("int8", "uint8", "int32"))
            axis = _attrs(node).get("axis", 1) % max(data.ndim, 1)
            self.qconsts[out] = (data, q, axis)
            self.consts[out] = host_ops.dequantize(data, _along(q.scale, axis, data.ndim),
                                                   _along(q.zero_point, axis, data.ndim))
            return
        info = self.tensors.get(x)
        q = self.qparams(node, node.input[1], zp, f"tensor {x!r}", info.dtype if info else None)
        self.views[out] = (x, q)
        self.host(node, lambda inputs, attrs: [host_ops.dequantize(inputs[0], q.scale, q.zero_point)],
                  dtype="float32")

    def on_QuantizeLinear(self, node: Any) -> None:
        x, out = node.input[0], node.output[0]
        zp = node.input[2] if len(node.input) > 2 else None
        q = self.qparams(node, node.input[1], zp, f"output {out!r}")
        if x in self.pending:
            self.finish(self.pending.pop(x), out, q)
            self.quantized[x] = (out, q)
        elif x in self.quantized:
            self.quantize_again(node, x, out, q)
        elif x in self.consts:
            self.consts[out] = host_ops.quantize(self.consts[x], *q.host())
        else:
            self.host(node, lambda inputs, attrs: [host_ops.quantize(inputs[0], *q.host())], q.scale, q.dtype,
                      q.zero_point)

    def quantize_again(self, node: Any, x: str, out: str, q: _Q) -> None:
        """Another QuantizeLinear of a float output already quantized (``DedicatedQDQPair`` gives each reader its
        own pair): a copy of the first, at the same quantization."""
        first, fq = self.quantized[x]
        if fq != q:
            raise self.fail(node, f"{x!r} is quantized twice, as (scale, zero point, type) {fq.host()} and "
                                  f"{q.host()}: the accelerator layer writes one quantization")
        self.host_layer(HostLayer(node.name, "Identity", (first,), {}, {}, (out,), host_ops.FLOAT_OPS["Identity"]),
                        self.tensors[first].shape, q)

    # ---- QDQ compute ops (float between DequantizeLinear and QuantizeLinear) --------------------
    def on_Conv(self, node: Any) -> None:
        x = self.activation(node, node.input[0], "input")
        w = self.qconst(node, node.input[1], "weight")
        b = self.bias(node, node.input[2], "bias") if len(node.input) > 2 and node.input[2] else None
        self.pending[node.output[0]] = _Pending("conv", node, dict(x=x, w=w, b=b))

    def bias(self, node: Any, tensor: str, what: str) -> tuple[np.ndarray, Any]:
        """(values, scale) of a QDQ bias: int32 at its scale, or float with scale None where quantize_static kept
        it float (``QuantizeBias=False``)."""
        if tensor not in self.qconsts and np.asarray(self.consts.get(tensor, 0)).dtype.kind == "f":
            return np.asarray(self.consts[tensor], np.float32), None
        values, q, _ = self.qconst(node, tensor, what)
        return values, q.scale

    def on_MatMul(self, node: Any) -> None:
        a = self.activation(node, node.input[0], "input A")
        b = node.input[1]
        b = (*self.qconsts[b], True) if b in self.qconsts else (*self.activation(node, b, "input B"), None, False)
        self.pending[node.output[0]] = _Pending("matmul", node, dict(a=a, b=b, bias=None))

    def on_Gemm(self, node: Any) -> None:
        a = self.activation(node, node.input[0], "input A")
        b = self.qconst(node, node.input[1], "weight B")
        bias = self.bias(node, node.input[2], "bias C") if len(node.input) > 2 and node.input[2] else None
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
            self.pending[node.output[0]] = _Pending("maxpool", node, dict(x=self.views[x], dq=x))
        elif x in self.tensors and self.tensors[x].dtype in ("int8", "uint8"):      # QOperator: on integers
            info = self.tensors[x]
            q = _Q(info.scale, info.zero_point, info.dtype)
            self.maxpool(node, (x, q), node.output[0], q, x)
        else:
            self.host(node, host_ops.FLOAT_OPS["MaxPool"])      # a float island

    def on_Relu(self, node: Any) -> None:
        x, out = node.input[0], node.output[0]
        if x in self.pending and self.pending[x].node.op_type in _ACTIVATED and not self.pending[x].relu:
            self.pending[out] = replace(self.pending.pop(x), relu=True)
        elif x in self.views:
            self.pending[out] = _Pending("relu", node, dict(x=self.views[x], dq=x))
        else:
            self.host(node, host_ops.FLOAT_OPS["Relu"])

    def flush(self, tensor: str) -> None:
        """A pending op whose float output a float op reads (an island of float ops, as QOperator models
        have): run it in float on the host, on its dequantized inputs, as onnxruntime does."""
        p = self.pending[tensor]
        if p.kind in ("conv", "matmul") or p.relu:
            raise self.fail(p.node, f"its float output {tensor!r} is read by a float op, not requantized: the "
                                    "accelerator's convs and matmuls write quantized outputs")
        del self.pending[tensor]
        self.host(p.node, host_ops.FLOAT_OPS[p.node.op_type])

    def finish(self, p: _Pending, out: str, yq: _Q) -> None:
        a = p.args
        if p.kind == "conv":
            self.conv(p.node, a["x"], a["w"], a["b"], out, yq, p.relu)
        elif p.kind == "matmul":
            self.matmul(p.node, a["a"], a["b"], a["bias"], out, yq, p.relu, p.node.op_type == "Gemm")
        elif p.kind == "add":
            self.resadd(p.node, a["a"], a["b"], out, yq, p.relu)
        elif p.kind == "maxpool":
            self.maxpool(p.node, a["x"], out, yq, a["dq"])
        else:
            self.relu(p.node, a["x"], a["dq"], out, yq)

    # ---- QOperator compute ops ---------------------------------------------------------------------
    def on_QLinearConv(self, node: Any) -> None:
        i = list(node.input)
        xq = self.qparams(node, i[1], i[2], "input")
        w = self._const(node, i[3], "weight")
        wq = self.qparams(node, i[4], i[5], "weight", str(w.dtype), per_channel=True)
        b = (self.consts[i[8]], np.float32(xq.scale) * np.asarray(wq.scale, np.float32)) \
            if len(i) > 8 and i[8] else None
        self.conv(node, (i[0], xq), (w, wq, 0), b, node.output[0], self.qparams(node, i[6], i[7], "output"), False)

    def on_QLinearMatMul(self, node: Any) -> None:
        i = list(node.input)
        a = (i[0], self.qparams(node, i[1], i[2], "input A"))
        if i[3] in self.consts:
            data = self.consts[i[3]]
            b = (data, self.qparams(node, i[4], i[5], "input B", str(data.dtype), per_channel=True), 1, True)
        else:
            b = (i[3], self.qparams(node, i[4], i[5], "input B"), None, False)
        self.matmul(node, a, b, None, node.output[0], self.qparams(node, i[6], i[7], "output"), False, False)

    def on_QGemm(self, node: Any) -> None:
        i = list(node.input)
        if len(i) < 8 or not i[7]:
            raise self.fail(node, "QGemm with a float output (no y_scale) is not supported")
        a = (i[0], self.qparams(node, i[1], i[2], "input A"))
        data = self._const(node, i[3], "weight B")
        bq = self.qparams(node, i[4], i[5], "weight B", str(data.dtype), per_channel=True)
        b = (data, bq, 0 if _attrs(node).get("transB", 0) else 1, True)
        bias = (self.consts[i[6]], np.float32(a[1].scale) * np.asarray(bq.scale, np.float32)) if i[6] else None
        yq = self.qparams(node, i[7], i[8] if len(i) > 8 else None, "output")
        self.matmul(node, a, b, bias, node.output[0], yq, False, True)

    def on_QLinearAdd(self, node: Any) -> None:
        i = list(node.input)
        ops = []
        for k, what in ((0, "input A"), (3, "input B")):
            q = self.qparams(node, i[k + 1], i[k + 2], what)
            ops.append((self.consts[i[k]], q, True) if i[k] in self.consts else (i[k], q, False))
        self.resadd(node, ops[0], ops[1], node.output[0], self.qparams(node, i[6], i[7], "output"), False)

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

    def conv(self, node: Any, x: tuple[str, _Q], w: tuple[np.ndarray, _Q, int], b: Any, out: str, yq: _Q,
             relu: bool) -> None:
        (xname, xq), weight = x, w[0]
        n, c, h, wd = self.nchw(node, xname)
        if weight.ndim != 4:
            raise self.fail(node, f"weight is {weight.shape}, not K x C x KH x KW: the accelerator's convs are 2-D")
        weight, ws, shift = self.weight(node, w, 0)
        k, cg, kh, kw = weight.shape
        stride, pad = self._window(node)
        group = _attrs(node).get("group", 1)
        if cg * group != c:
            raise self.fail(node, f"weight {weight.shape} with group={group} takes {cg * group} input channels, "
                                  f"the input {xname!r} has {c}")
        scale = self.scales(node, "the requantization scale x_scale * w_scale / y_scale",
                            _requant_scale(xq.scale, ws, yq.scale))
        bias = None
        if b is not None:
            bias, bs = b
            if bias.shape != (k,):
                raise self.fail(node, f"bias is {bias.shape}: the conv has {k} output channels, one bias each")
            in_scale = np.float32(xq.scale) * np.asarray(ws, np.float32)
            if bs is None:
                bias = _FloatBias(bias, in_scale)
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
                        out, yq, scale, relu, _window_shares(op, wq, xint, xz, shift), "nhwc",
                        (n, k, op.out_h, op.out_w))

    # Over 40 lines: one mapping whose cases (constant or activation B, zero points, Gemm's transB) share the operands.
    def matmul(self, node: Any, a: tuple[str, _Q], b: tuple, bias: Any, out: str, yq: _Q, relu: bool,
               gemm: bool) -> None:
        (aname, aq), (bv, bq, b_axis, b_const) = a, b
        attrs = _attrs(node)
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
            shares = _Shares(-az * (w.astype(np.int64).sum(axis=0) + k_ * shift),
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
            shares = _Shares(np.full(n_, k_ * az * bz, np.int64),
                             tuple((t, term) for t, z, term in ((aint, bz, host_ops.row_sum_term(-bz)),
                                                                 (bint, az, host_ops.col_sum_term(-az))) if z))
        if bias is not None:
            bvals, float_bias = bias[0], bias[1] is None
            if bvals.dtype != (np.float32 if float_bias else np.int32) or bvals.size != n_:
                raise self.fail(node, f"bias C must be {n_} int32 values, got {bvals.dtype} {bvals.shape}")
            bias = _FloatBias(bvals.reshape(n_), np.float32(aq.scale) * np.asarray(bs, np.float32)) if float_bias \
                else bvals.reshape(n_)
        op = matmul(m_, n_, k_)
        scale = self.scales(node, "the requantization scale a_scale * b_scale / y_scale",
                            _requant_scale(aq.scale, bs, yq.scale))
        self.gemm_layer(node, op, feeds, consts, bias, out, yq, scale, relu, shares, "native", (*ashape[:-1], n_),
                        repeat)

    def gemm_layer(self, node: Any, op: Any, feeds: dict[str, Feed], consts: dict[str, np.ndarray],
                   bias: np.ndarray | None, out: str, yq: _Q, scale: np.ndarray, relu: bool, shares: _Shares,
                   layout: str, shape: tuple[int, ...], repeat: int = 1) -> None:
        """A conv or matmul. ``shares`` are the zero points' shares of each sum (exact in int32). Where they are
        a constant, one per output channel, and the output is symmetric int8 per tensor (or, with the store
        unit's requantization extension, any 8-bit output with one scale), they fold into the bias and the
        store unit requantizes; else the layer writes its int32 sums and a host epilogue adds them and
        requantizes as onnxruntime does (Gemmini's store unit has no zero point, uint8 range or per-channel
        scale)."""
        kind = "channel" if op.KIND != "matmul" else "row"
        per_channel = _offset_per_channel(shares.offset, layout == "nhwc")
        float_bias = bias if isinstance(bias, _FloatBias) else None
        in_store = yq.plain or (self.store_requant and yq.per_tensor and yq.dtype in ("int8", "uint8"))
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
        self.accel(node, op, feeds, consts, acc, _Q(1.0, 0, "int32"), layout, shape, repeat)
        self.epilogue(node, acc, out, yq, scale, shares, relu, layout == "nhwc", float_bias)

    def epilogue(self, node: Any, acc: str, out: str, yq: _Q, scale: np.ndarray, shares: _Shares, relu: bool,
                 channels_first: bool, float_bias: _FloatBias | None = None) -> None:
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
        layer = HostLayer(f"{node.name}_requantize", "Requantize", (acc, *names), {}, {}, (out,), fn, rounds)
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

    def resadd(self, node: Any, a: tuple, b: tuple, out: str, yq: _Q, relu: bool) -> None:
        if a[2] and b[2]:
            raise self.fail(node, "both operands are constants")
        if a[2]:
            a, b = b, a
        shape = self.shape(node, a[0])
        other = b[0].shape if b[2] else self.shape(node, b[0])
        if other != shape and not (b[2] and _broadcasts(other, shape)):
            raise self.fail(node, f"operands {shape} and {other}: the resadd needs equal shapes (or a constant "
                                  "that broadcasts to the activation's)")
        if not (a[1].plain and b[1].plain and yq.plain):
            self.quantized_add(node, a, b, out, yq, relu, shape)
            return
        ys = yq.scale
        nhwc = len(shape) == 4 and any(not o[2] and self.tensors[o[0]].layout == "nhwc" for o in (a, b))
        layout = "nhwc" if nhwc else "native"
        op_shape = to_layout_shape(shape, layout) if nhwc else (1, 1, int(np.prod(shape[:-1])), shape[-1] if shape else 1)
        ra, rb = (self.normal(node, f"the scale ratio {which}_scale / y_scale", _ratio(o[1].scale, ys))
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
        self.accel(node, op, feeds, consts, out, yq, layout, shape)

    def quantized_add(self, node: Any, a: tuple, b: tuple, out: str, yq: _Q, relu: bool,
                      shape: tuple[int, ...]) -> None:
        """An Add with zero points or uint8 operands: on the host, as onnxruntime's QLinearAdd."""
        inputs = tuple(None if o[2] else o[0] for o in (a, b))
        consts = {i: o[0] for i, o in enumerate((a, b)) if o[2]}
        fn = host_ops.quantized_add((a[1].scale, a[1].zero_point), (b[1].scale, b[1].zero_point), yq.host(), relu)
        layer = HostLayer(node.name, "QLinearAdd", inputs, consts, {}, (out,), fn)
        self.layers.append(layer)
        self.add_tensor(TensorInfo(out, shape, yq.dtype, yq.scale, zero_point=yq.zero_point), layer)

    def maxpool(self, node: Any, x: tuple[str, _Q], out: str, yq: _Q, dq: str) -> None:
        """int8 on the accelerator (the max commutes with any zero point; padding never wins), fused into the
        conv that writes ``x`` where it can (Conv -> (Relu) -> MaxPool: the store unit pools, no DRAM round
        trip); uint8 on the host. Requantized on the host where the output's quantization differs."""
        xname, xq = x
        n, c, h, w = self.nchw(node, xname)
        kernel = tuple(_attrs(node)["kernel_shape"])
        stride, pad = self._window(node)
        op = maxpool2d(n, h, w, c, kernel=kernel, stride=stride, padding=pad)
        shape = (n, c, op.out_h, op.out_w)
        if self.fuse_pool and yq == xq and self._fuse_pool(node, op, xname, dq, out, shape):
            return
        mid = out if yq == xq else f"{out}__max"     # the max at the input's quantization
        if xq.dtype == "int8":
            self.accel(node, op, {"input": Feed(xname, "nhwc", (n, h, w, c))}, {}, mid, xq, "nhwc", shape)
        else:
            self.host_layer(HostLayer(node.name, "MaxPool", (xname,), {}, _attrs(node), (mid,),
                                      host_ops.FLOAT_OPS["MaxPool"]), shape, xq)
        if mid != out:
            self.host_layer(HostLayer(f"{node.name}_requantize", "Requantize", (mid,), {}, {}, (out,),
                                      host_ops.requantize((xq.scale, xq.zero_point), yq.host())), shape, yq)

    def _sole_output(self, xname: str, dq: str) -> AccelLayer | None:
        """The accelerator layer that writes ``xname`` where one node alone reads it (through ``dq``)."""
        prod = self.producer.get(xname)
        if isinstance(prod, AccelLayer) and self.uses.get(xname, 0) == 1 and self.uses.get(dq, 0) == 1 \
                and xname not in self.graph_outputs:
            return prod
        return None

    def _fuse_pool(self, node: Any, pool: Any, xname: str, dq: str, out: str, shape: tuple[int, ...]) -> bool:
        """Fold the max pool into the conv2d that writes ``xname`` alone (its store unit pools), if it can."""
        prod = self._sole_output(xname, dq)
        # a col-scaled conv does not pool: only gemmini.h's LOOP_CONV_WS pools, and its loops store several
        # column blocks under the store unit's one scale vector
        if prod is None or prod.op.KIND != "conv2d" or prod.op.pool or prod.op.out_dtype != "int8" \
                or prod.op.col_scaled or not store_can_pool(pool.kernel, pool.stride, pool.padding):
            return False
        fused = replace(prod, op=replace(prod.op, pool=(pool.kernel[0], pool.stride, pool.padding)), output=out,
                        nodes=(*prod.nodes, node.name))
        self.layers[self.layers.index(prod)] = fused
        self.add_tensor(replace(self.tensors.pop(xname), name=out, shape=shape), fused)
        return True

    def relu(self, node: Any, x: tuple[str, _Q], dq: str, out: str, yq: _Q) -> None:
        """DequantizeLinear -> Relu -> QuantizeLinear: the producer's ReLU when nothing else reads its output
        and the quantization stays symmetric int8 at one scale, else a requantizing ReLU on the host."""
        xname, xq = x
        prod = self._sole_output(xname, dq)
        fusable = (prod is not None and yq == xq and xq.plain and getattr(prod.op, "activation", "") == "none"
                   and prod.op.KIND != "maxpool" and not getattr(prod.op, "pool", None))
        if fusable:
            fused = replace(prod, op=replace(prod.op, activation="relu"), output=out, nodes=(*prod.nodes, node.name))
            self.layers[self.layers.index(prod)] = fused
            self.add_tensor(replace(self.tensors.pop(xname), name=out), fused)
            return
        self.host_layer(HostLayer(node.name, "Relu", (xname,), {}, {}, (out,),
                                  host_ops.requantize_relu((xq.scale, xq.zero_point), yq.host())),
                        self.shape(node, xname), yq)

    def host_layer(self, layer: HostLayer, shape: tuple[int, ...], q: _Q) -> None:
        self.layers.append(layer)
        self.add_tensor(TensorInfo(layer.outputs[0], shape, q.dtype, q.scale, zero_point=q.zero_point), layer)

    def accel(self, node: Any, op: Any, feeds: dict[str, Feed], consts: dict[str, np.ndarray], out: str,
              q: _Q, layout: str, shape: tuple[int, ...], repeat: int = 1) -> None:
        for f in feeds.values():
            if f.tensor not in self.tensors or self.tensors[f.tensor].dtype != "int8":
                raise self.fail(node, f"input {f.tensor!r} is not an int8 tensor of the network")
        _check_bytes(f"node {node.name!r} ({node.op_type}): output {out!r}", shape, q.dtype)
        layer = AccelLayer(node.name, op, feeds, consts, out, repeat, (node.name,))
        self.layers.append(layer)
        self.add_tensor(TensorInfo(out, tuple(shape), q.dtype, q.scale, layout, q.zero_point), layer)


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _requant_scale(x_scale: float, w_scale: Any, y_scale: float) -> np.ndarray:
    """onnxruntime's output multiplier for QLinearConv/QLinearMatMul (one, or one per output channel), in
    float32 as it computes it."""
    with np.errstate(all="ignore"):   # under- and overflow show in the value, which the caller checks
        return np.float32(x_scale) * np.asarray(w_scale, np.float32) / np.float32(y_scale)


def _uniform(values: np.ndarray) -> bool:
    return values.size <= 1 or bool(np.all(values == values.reshape(-1)[0]))


def _along(values: Any, axis: int, ndim: int) -> Any:
    """A per-channel vector shaped to broadcast along ``axis`` of an ``ndim``-D tensor (a scalar as it is)."""
    if np.ndim(values) == 0:
        return values
    return np.reshape(values, [-1 if d == axis else 1 for d in range(ndim)])


def _window_weight_sums(op: Any, weight: np.ndarray) -> np.ndarray:
    """Per output position and channel (N x K x OH x OW), the sum of the weights whose taps fall inside the
    input. The accelerator pads with 0 where onnxruntime pads with the zero point (the real 0), so an input
    zero point zx adds ``-zx`` times this, not times the whole kernel's sum, at the borders."""
    ones = {"input": np.ones((op.batch, op.in_h, op.in_w, getattr(op, op.CHANNELS)), np.int8), "weight": weight}
    sums = replace(op, bias=None, out_dtype="int32", scale=1.0, activation="none").reference(ones)["output"]
    return sums.astype(np.int64).transpose(0, 3, 1, 2)


def _window_shares(op: Any, weight: np.ndarray, x: str, zx: int, shift: np.ndarray) -> _Shares:
    """The zero points' shares of a conv's sums (``weight`` the int8 w8 in the op's layout, ``shift`` d per output
    channel). Over the taps inside the input, ``sum (x - zx)(w8 + d) = sum x w8 - zx sum w8 - zx d n + d sum x``
    (n: the taps inside, times the channels a conv sums): the first is the accelerator's (it pads with 0), the
    last a term of the input; onnxruntime pads with the zero point, whose taps add nothing."""
    k = shift.size
    offset = -zx * _window_weight_sums(op, weight) if zx else np.zeros((1, k, 1, 1), np.int64)
    if not shift.any():
        return _Shares(offset)
    if zx:
        offset = offset - zx * shift.reshape(1, k, 1, 1) * _window_weight_sums(op, np.ones_like(weight))
    term = host_ops.window_sum_term(shift, op.kernel, op.stride, op.padding, op.KIND == "depthwise")
    return _Shares(offset, ((x, term),))


def _offset_per_channel(offset: np.ndarray, channels_first: bool) -> np.ndarray | None:
    """The one offset per output channel, or None where it varies with the position (padded borders)."""
    if not channels_first:
        return offset
    return offset[0, :, 0, 0] if np.all(offset == offset[:1, :, :1, :1]) else None


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
