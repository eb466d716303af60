"""Import an onnxruntime-quantized ONNX model (int8 or uint8, zero points or not, per-channel weight scales or
not; 4-bit, 16-bit and float8 types too) as a :class:`~networks.network.Network`.

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
:func:`Layers.gemm_layer`). Weights whose ``w - zw`` leaves int8 and matmuls of two activations with
zero points: the accelerator multiplies int8 operands, and the zero points' shares that depend on the data
(a weight shift times each output's input sum; the row and column sums of a matmul of activations) are
terms the epilogue adds in int32 (:class:`Shares`). An Add with zero points runs on the host as QLinearAdd.

quantize_static's other types (QDQ): 4-bit weights are int8 weights (int8 holds their values exactly). A 16-bit,
4-bit or float8 activation, or a 16-bit weight, makes a float island: its DequantizeLinear, the ops that read
it (a Conv, MatMul or Gemm too: :mod:`networks.host_linear`) and their QuantizeLinear run on the host in float,
as onnxruntime's QDQ path runs them, since the accelerator multiplies 8-bit operands.

A QDQ Softmax over the last axis of an int8 tensor whose output is quantized to symmetric int8
(a step of at least 1/127) runs on the normalization unit (``tk.softmax``: I-BERT's integer exp,
so it differs from onnxruntime's float softmax; the network run reports the difference per layer);
with other output quantizations it runs on the host. So do a QDQ LayerNormalization over the last axis
(``tk.layernorm``, then gamma and beta as a 1x1 depthwise conv where they are not a plain scale) and a QDQ
Gelu (``tk.igelu``), both to symmetric int8, and the same two as exporters decompose them (ReduceMean, Sub, Pow,
..., Div; Div, Erf, Add, Mul, Mul: :mod:`networks.onnx_fuse`); a Mul by a positive constant folds into the store scale of the
layer that writes its input; Reshape, Transpose and the like of a dequantized int8 tensor move its integers
(:mod:`networks.onnx_transformer`).

Everything else (GlobalAveragePool, Flatten of a float tensor, QLinearSoftmax, ... and the
Quantize/DequantizeLinear around them) runs on the host in numpy (:mod:`networks.host_ops`). What the accelerator cannot express is an error that
names the node and the reason.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from isa import HardwareConfig

from . import host_ops
from .network import HostLayer, Network, TensorInfo
from .onnx_fuse import fuse_decomposed
from .onnx_layers import unit_writes_softmax
from .onnx_load import load_model
from .onnx_quant import (ACCEL_TYPES, ISLAND_TYPES, NARROW_TYPES, NodeError, Quant, along, check_bytes, node_attrs,
                         uniform)
from .onnx_transformer import Pending, TransformerLayers

__all__ = ["from_onnx"]   # the public names (docs/reference/networks.md)

_ACTIVATED = ("Conv", "MatMul", "Gemm", "Add")      # QDQ ops whose ReLU the store unit can apply
UNIT_KINDS = ("softmax", "layernorm", "gelu")       # pending ops the normalization unit computes
ISLAND = "it reads a float island (a 16-bit, 4-bit or float8 tensor, or an output left in float)"


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
    proto, name = load_model(model)
    host_ops.narrow_types()   # numpy knows the model's 4-bit and float8 types before any tensor is read
    net = _Importer(fuse_decomposed(proto), name, fuse_pool, hw is not None and hw.store_requant,
                    hw is not None and hw.store_col_scales).build()
    net.model = proto   # onnxruntime runs the model as given
    return net


@dataclass
class _Importer(TransformerLayers):
    """Reads the ONNX nodes in order and maps each onto the layers of :class:`Layers`."""

    qconsts: dict[str, tuple[np.ndarray, Quant, int]] = field(default_factory=dict)   # DQ of a constant: ints, q, axis
    views: dict[str, tuple[str, Quant]] = field(default_factory=dict)     # DQ of an activation: int tensor, q
    pending: dict[str, Pending] = field(default_factory=dict)
    quantized: dict[str, tuple[str, Quant]] = field(default_factory=dict)   # finished float output -> its Q output
    island: set[str] = field(default_factory=set)   # float tensors of islands: dequantized from ISLAND_TYPES, or
    # computed on the host from such a tensor

    def qparams(self, node: Any, scale: str, zero_point: str | None, what: str, data_dtype: str | None = None,
                per_channel: bool = False, types: tuple[str, ...] = ACCEL_TYPES) -> Quant:
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
            if not uniform(s):
                raise self.fail(node, f"{what} has per-channel scales ({s.size} different values): an activation "
                                      "has one scale")
            if not uniform(zp):
                raise self.fail(node, f"{what} has per-channel zero points: an activation has one zero point")
        return Quant(float(s[0]) if uniform(s) else s, int(zp[0]) if uniform(zp) else zp.astype(np.int64), dtype)

    def activation(self, node: Any, tensor: str, what: str) -> tuple[str, Quant]:
        """(integer tensor, quantization) of a QDQ activation input (a DequantizeLinear output)."""
        if tensor in self.views:
            return self.views[tensor]
        if tensor in self.pending:
            raise self.fail(node, f"{what} {tensor!r} is the float output of {self.pending[tensor].node.name!r}, "
                                  "not requantized: only a QuantizeLinear (or Relu then QuantizeLinear) may follow it")
        raise self.fail(node, f"{what} {tensor!r} is a float tensor, not a DequantizeLinear output: the model is "
                              "not quantized (quantize it with onnxruntime.quantization.quantize_static)")

    def qconst(self, node: Any, tensor: str, what: str) -> tuple[np.ndarray, Quant, int]:
        """(integers, quantization, channel axis) of a DequantizeLinear of a constant."""
        if tensor in self.qconsts:
            return self.qconsts[tensor]
        raise self.fail(node, f"{what} {tensor!r} is not a quantized constant (a DequantizeLinear of an int "
                              "initializer): the model is not quantized")

    def operand(self, node: Any, tensor: str, what: str) -> tuple[Any, Quant, bool]:
        """(tensor name or constant ints, quantization, is_constant) of a QDQ operand."""
        if tensor in self.qconsts:
            data, q, _ = self.qconsts[tensor]
            if not q.per_tensor:
                raise self.fail(node, f"{what} {tensor!r} has per-channel scales: only weights may")
            return data, q, True
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
            check_bytes(what, dims, dtype)
            inputs[vi.name] = TensorInfo(vi.name, dims, dtype)
            self.add_tensor(inputs[vi.name], None)
        for index, node in enumerate(g.node):
            if not node.name:
                node.name = f"{node.op_type}_{index}"
            try:
                self.dispatch(node)
            except NodeError:
                raise
            except (ValueError, TypeError, IndexError, KeyError) as exc:   # a check still missing: name the node
                raise self.fail(node, str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
                                ) from None
        for out in self.graph_outputs:
            if out in self.pending:   # a float output (OpTypesToExcludeOutputQuantization)
                self.flush(out, "its float output is a graph output")
            if out not in self.tensors:
                raise ValueError(f"graph output {out!r} is a constant or is not computed by the graph")
        return Network(self.name, inputs, self.graph_outputs, self.tensors, self._live_layers(), self.proto)

    def dispatch(self, node: Any) -> None:
        handler = getattr(self, f"on_{node.op_type}", None)
        if node.op_type in host_ops.FLOAT_OPS and self.in_island(node):   # a Conv, MatMul, Add, ... of an island
            self.host(node, host_ops.FLOAT_OPS[node.op_type], why=ISLAND)
        elif node.op_type in host_ops.LAYOUT_OPS and node.input[0] in self.views:
            self.layout_of_view(node)
        elif handler is not None:
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
             zero_point: int = 0, why: str = "") -> HostLayer:
        """A host layer for ``node`` (``why``: the importer's reason, where it has one); outputs of layout ops on
        int8 keep the input's scale."""
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
                self.flush(t, f"its float output is read by {node.op_type} node {node.name!r}")
                names.append(t)
            else:
                self.activation(node, t, "input")   # raises the reason
        attrs, island = node_attrs(node), self.in_island(node)
        first = self.tensors.get(names[0]) if names and names[0] else None
        if scale is None and node.op_type in host_ops.LAYOUT_OPS and first is not None:
            scale, zero_point = first.scale, first.zero_point
        layer = HostLayer(node.name, node.op_type, tuple(names), constants, attrs, tuple(node.output), fn, why=why)
        for out in node.output:   # by size first where inference knows it: the dry run allocates the outputs
            dtype_out, dims = self.types.get(out, (None, None))
            if dims is not None and None not in dims:
                check_bytes(f"node {node.name!r} ({node.op_type}): output {out!r}", dims, dtype or dtype_out)
        # shapes by a dry run on zeros: onnx's inference does not know onnxruntime's QLinear* ops
        with np.errstate(all="ignore"):
            dry = fn([constants[i] if t is None else np.zeros(self.tensors[t].shape, self.tensors[t].dtype)
                      for i, t in enumerate(names)], attrs)
        for out, value in zip(node.output, dry):
            out_dtype = dtype or str(np.asarray(value).dtype)
            self.add_tensor(TensorInfo(out, tuple(np.shape(value)), out_dtype, scale, zero_point=zero_point), layer)
        if island:
            self.island.update(o for o in node.output if self.tensors[o].dtype == "float32")
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
                             types=(*ACCEL_TYPES, "int32", *ISLAND_TYPES))
            axis = node_attrs(node).get("axis", 1) % max(data.ndim, 1)
            self.consts[out] = host_ops.dequantize(data, along(q.scale, axis, data.ndim),
                                                   along(q.zero_point, axis, data.ndim))
            if q.dtype in NARROW_TYPES:      # 4-bit weights: their values as the 8-bit type's
                data, q = data.astype(NARROW_TYPES[q.dtype]), replace(q, dtype=NARROW_TYPES[q.dtype])
            if q.dtype in ISLAND_TYPES:
                self.island.add(out)
            else:
                self.qconsts[out] = (data, q, axis)
            return
        info = self.tensors.get(x)
        q = self.qparams(node, node.input[1], zp, f"tensor {x!r}", info.dtype if info else None,
                         types=(*ACCEL_TYPES, *ISLAND_TYPES))
        if q.dtype in ACCEL_TYPES:
            self.views[out] = (x, q)
        else:
            self.island.add(out)
        self.host(node, lambda inputs, attrs: [host_ops.dequantize(inputs[0], q.scale, q.zero_point)],
                  dtype="float32")

    def on_QuantizeLinear(self, node: Any) -> None:
        x, out = node.input[0], node.output[0]
        zp = node.input[2] if len(node.input) > 2 else None
        q = self.qparams(node, node.input[1], zp, f"output {out!r}", types=(*ACCEL_TYPES, *ISLAND_TYPES))
        if x in self.pending and not self.writes(self.pending[x].kind, q):
            self.flush(x, f"its output is quantized to {q.dtype} (scale {float(np.ravel(q.scale)[0]):.4g}, zero point "
                          f"{q.zero_point}), which {'the normalization unit' if self.pending[x].kind in UNIT_KINDS else 'the accelerator'} "
                          "does not write")
        if x in self.pending:
            self.finish(self.pending.pop(x), out, q)
            self.quantized[x] = (out, q)
        elif x in self.quantized:
            self.quantize_again(node, x, out, q)
        elif x in self.views and self.views[x][1] == q:     # the int8 values as they are: a copy
            self.host_layer(HostLayer(node.name, "Identity", (self.views[x][0],), {}, {}, (out,),
                                      host_ops.LAYOUT_OPS["Identity"]), self.tensors[self.views[x][0]].shape, q)
        elif x in self.consts:
            self.consts[out] = host_ops.quantize(self.consts[x], *q.host())
        else:
            self.host(node, lambda inputs, attrs: [host_ops.quantize(inputs[0], *q.host())], q.scale, q.dtype,
                      q.zero_point)

    @staticmethod
    def writes(kind: str, q: Quant) -> bool:
        """Whether a pending op of ``kind`` can write its output quantized as ``q`` on the accelerator: an 8-bit
        type; the normalization unit's ops symmetric int8 (softmax at a step of at least 1/127)."""
        if kind == "softmax":
            return unit_writes_softmax(q)
        return q.plain if kind in (*UNIT_KINDS, "mul") else q.dtype in ACCEL_TYPES

    def layout_of_view(self, node: Any) -> None:
        """A Reshape, Transpose, ... of a dequantized 8-bit tensor: on its integers (exact, the same quantization),
        and dequantized for any float reader."""
        xint, q = self.views[node.input[0]]
        on_ints = type(node)()
        on_ints.CopyFrom(node)
        out = node.output[0]
        on_ints.input[0], on_ints.output[0] = xint, f"{out}__q"
        self.host(on_ints, host_ops.LAYOUT_OPS[node.op_type])
        self.views[out] = (on_ints.output[0], q)
        dq = HostLayer(f"{node.name}_dequantize", "DequantizeLinear", (on_ints.output[0],), {}, {}, (out,),
                       lambda inputs, attrs: [host_ops.dequantize(inputs[0], q.scale, q.zero_point)])
        self.host_layer(dq, self.tensors[on_ints.output[0]].shape, Quant(None, 0, "float32"))

    def quantize_again(self, node: Any, x: str, out: str, q: Quant) -> None:
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
        self.pending[node.output[0]] = Pending("conv", node, dict(x=x, w=w, b=b))

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
        self.pending[node.output[0]] = Pending("matmul", node, dict(a=a, b=b, bias=None))

    def on_Gemm(self, node: Any) -> None:
        a = self.activation(node, node.input[0], "input A")
        b = self.qconst(node, node.input[1], "weight B")
        bias = self.bias(node, node.input[2], "bias C") if len(node.input) > 2 and node.input[2] else None
        self.pending[node.output[0]] = Pending("matmul", node, dict(a=a, b=(*b, True), bias=bias))

    def on_Add(self, node: Any) -> None:
        a, b = node.input
        if all(t in self.views or t in self.qconsts for t in (a, b)) and not all(t in self.qconsts for t in (a, b)):
            self.pending[node.output[0]] = Pending("add", node, dict(a=self.operand(node, a, "input A"),
                                                                      b=self.operand(node, b, "input B")))
        else:
            self.host(node, host_ops.FLOAT_OPS["Add"], why="not an Add of two dequantized 8-bit tensors (or one and a "
                                                           "quantized constant)")

    def on_MaxPool(self, node: Any) -> None:
        x = node.input[0]
        if x in self.views:
            self.pending[node.output[0]] = Pending("maxpool", node, dict(x=self.views[x], dq=x))
        elif x in self.tensors and self.tensors[x].dtype in ACCEL_TYPES:      # QOperator: on integers
            info = self.tensors[x]
            q = Quant(info.scale, info.zero_point, info.dtype)
            self.maxpool(node, (x, q), node.output[0], q, x)
        else:
            self.host(node, host_ops.FLOAT_OPS["MaxPool"], why=ISLAND)

    def on_Softmax(self, node: Any) -> None:
        """QDQ: Softmax over the last axis of a dequantized int8 tensor is the normalization unit's (when its
        output is quantized); anything else runs on the host."""
        x = node.input[0]
        why = self.not_rows(x, node_attrs(node).get("axis", -1))
        if not why:
            self.pending[node.output[0]] = Pending("softmax", node, dict(x=self.views[x], dq=x))
        else:
            self.host(node, host_ops.FLOAT_OPS["Softmax"], why=why)

    def on_Relu(self, node: Any) -> None:
        x, out = node.input[0], node.output[0]
        if x in self.pending and self.pending[x].node.op_type in _ACTIVATED and self.pending[x].relu is None:
            self.pending[out] = replace(self.pending.pop(x), relu=node)
        elif x in self.views:
            self.pending[out] = Pending("relu", node, dict(x=self.views[x], dq=x))
        else:
            self.host(node, host_ops.FLOAT_OPS["Relu"], why="its input is a float tensor")

    def in_island(self, node: Any) -> bool:
        """Whether ``node`` reads a float island (:data:`ISLAND_TYPES`): then it runs on the host, in float."""
        return any(t in self.island for t in node.input)

    def flush(self, tensor: str, why: str) -> None:
        """A pending op whose float output is not quantized to 8 bits: read by a float op (as in QOperator
        models, or with OpTypesToExcludeOutputQuantization), quantized to a type the accelerator does not
        compute on (or, for a softmax, to one the normalization unit cannot write), or a graph output. It runs in float on the host, on its dequantized inputs, as onnxruntime
        runs it, and so does what reads its output (a float island)."""
        p = self.pending.pop(tensor)
        self.host(p.node, host_ops.FLOAT_OPS[p.node.op_type], why=why)
        if p.relu is not None:
            self.host(p.relu, host_ops.FLOAT_OPS["Relu"], why=f"it follows {p.node.name!r}, on the host")
        self.island.add(tensor)

    def finish(self, p: Pending, out: str, yq: Quant) -> None:
        a, relu = p.args, p.relu is not None
        if p.kind == "conv":
            self.conv(p.node, a["x"], a["w"], a["b"], out, yq, relu)
        elif p.kind == "matmul":
            self.matmul(p.node, a["a"], a["b"], a["bias"], out, yq, relu, p.node.op_type == "Gemm")
        elif p.kind == "add":
            self.resadd(p.node, a["a"], a["b"], out, yq, relu)
        elif p.kind == "mul":
            if not self.fold_scale(p.node, a["x"], a["dq"], a["factor"], out, yq):
                self.scale_on_host(p.node, a["x"], a["factor"], out, yq)
        elif p.kind == "layernorm":
            self.layernorm(p.node, a["x"], a["gamma"], a["beta"], out, yq)
        elif p.kind == "gelu":
            self.gelu(p.node, a["x"], out, yq)
        elif p.kind == "maxpool":
            self.maxpool(p.node, a["x"], out, yq, a["dq"])
        elif p.kind == "softmax":
            self.softmax(p.node, a["x"], out, yq)
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
        b = (data, bq, 0 if node_attrs(node).get("transB", 0) else 1, True)
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
