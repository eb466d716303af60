"""A quantized transformer layer's ops beyond its GEMMs, kept on the accelerator: LayerNormalization and Gelu on
the normalization unit, and the elementwise ops a QDQ graph puts between the GEMMs folded into the layers that
write their inputs.

* LayerNormalization over the last axis: ``tk.layernorm`` of the int8 rows (Gemmini's unit: no gamma, no beta).
  A uniform positive gamma with a zero beta is the unit's scale; any other gamma and beta are a 1x1 depthwise
  conv after it (gamma the int8 weight, one per channel, beta its int32 bias), reading the unit's output at a
  step fine enough for the output's range (:func:`normalized_step`).
* Gelu: ``tk.igelu`` of the int8 values (I-BERT's integer GELU; ``approximate="tanh"`` gets the same
  polynomial, whose error against either form is within a step at int8).
* Mul by a positive constant scalar (attention's 1/sqrt(d)): into the store scale of the layer that writes the
  other operand.
* Reshape, Transpose, Squeeze, Unsqueeze, Flatten, Identity of a dequantized int8 tensor: on the int8 values,
  the QuantizeLinear after them (at the same quantization) a copy.

A fold replaces two roundings (the producer's to int8, then onnxruntime's after the Mul) with one, so a folded
layer can differ from onnxruntime by a step where the first rounding moved the second; the network run reports
each layer's deviation. Where the producer cannot take the fold (it has other readers, an activation, another
kind), the Mul is a requantization on the host. A linear layer's bias Add (onnxruntime's quantizer leaves it
after the MatMul) is not folded into the matmul's bias, though the accelerator could: rounding once there moved
a BERT-base layer's output away from onnxruntime's (98.25% of its elements within 2 steps, mean 0.75 step)
where the resadd, rounding twice as onnxruntime does, keeps it close (99.62%, mean 0.51).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from toolkit.conv.ops import depthwise_conv2d
from toolkit.norm import igelu, layernorm

from . import host_ops
from .network import AccelLayer, Feed, HostLayer
from .onnx_layers import Layers, unit_writes_softmax
from .onnx_quant import Quant, node_attrs

GELU_FORMS = ("none", "tanh")


@dataclass
class Pending:
    """A QDQ compute op seen in float, waiting for the QuantizeLinear that gives its output scale."""

    kind: str
    node: Any
    args: dict[str, Any]
    relu: Any = None   # the Relu node folded into it


def normalized_step(gamma: np.ndarray, beta: np.ndarray, y_scale: float, cols: int) -> float:
    """The step at which the unit writes x_hat = (x - mean) / std for a depthwise gamma, beta after it: 1/127 of
    the largest |x_hat| the first channel to saturate (the largest gamma) can show within the output's int8 range,
    (127 y_scale + |beta|) / |gamma|. Calibration set y_scale from the largest outputs it saw, so x_hat past that
    is past what calibration saw in that channel; x_hat's spread is the same in every channel, so other channels
    clip at it as rarely. No more than x_hat can ever be: sqrt(cols - 1) (Cauchy-Schwarz on a row's deviations)."""
    with np.errstate(divide="ignore"):
        reach = (127 * y_scale + np.abs(beta)) / np.abs(gamma)
    return min(math.sqrt(max(cols - 1, 1)), float(np.min(reach))) / 127


class TransformerLayers(Layers):
    """The handlers and builders of :mod:`networks.onnx_transformer`'s layers, mixed into the importer
    (:class:`networks.onnx_import._Importer`, whose ``views`` and ``pending`` its handlers read and fill)."""

    def on_Mul(self, node: Any) -> None:
        """QDQ: a dequantized int8 tensor times a constant scalar, requantized: a fold into the store scale of the
        layer that writes it (:meth:`TransformerLayers.fold_scale`)."""
        x, c = node.input if node.input[0] in self.views else node.input[::-1]
        if x in self.views and c in self.consts and np.size(self.consts[c]) == 1:
            factor = float(np.ravel(self.consts[c])[0])
            self.pending[node.output[0]] = Pending("mul", node, dict(x=self.views[x], dq=x, factor=factor))
        else:
            self.host(node, host_ops.FLOAT_OPS["Mul"], why="not a dequantized 8-bit tensor times a constant scalar")

    def on_LayerNormalization(self, node: Any) -> None:
        """QDQ: LayerNormalization over the last axis of a dequantized int8 tensor, constant gamma and beta: the
        normalization unit's (then a depthwise affine); anything else on the host."""
        x, axis = node.input[0], node_attrs(node).get("axis", -1)
        gamma = self.consts.get(node.input[1])
        beta_name = node.input[2] if len(node.input) > 2 else ""
        beta = self.consts.get(beta_name) if beta_name else None
        why = self.not_rows(x, axis) or ("gamma or beta is not a constant" if gamma is None or beta_name and beta is None
                                        else "" if len(node.output) == 1 else "its mean or inverse std is read too")
        if why:
            self.host(node, host_ops.FLOAT_OPS["LayerNormalization"], why=why)
        else:
            self.pending[node.output[0]] = Pending("layernorm", node, dict(x=self.views[x], gamma=gamma, beta=beta))

    def on_Gelu(self, node: Any) -> None:
        """QDQ: Gelu of a dequantized int8 tensor on the normalization unit (I-GELU); anything else on the host."""
        x = node.input[0]
        if x in self.views and self.views[x][1].plain and node_attrs(node).get("approximate", "none") in GELU_FORMS:
            self.pending[node.output[0]] = Pending("gelu", node, dict(x=self.views[x]))
        else:
            self.host(node, host_ops.FLOAT_OPS["Gelu"], why=self.not_rows(x, -1) or "its input has a zero point, or "
                      "its approximate attribute is neither none nor tanh")

    def not_rows(self, x: str, axis: int) -> str:
        """Why the unit cannot take rows of ``x`` along ``axis`` (empty where it can: x a dequantized int8 tensor,
        ``axis`` its last)."""
        if x not in self.views:
            return "its input is not a dequantized 8-bit tensor"
        xint, q = self.views[x]
        if q.dtype != "int8":
            return f"its input is {q.dtype} (the normalization unit reads int8)"
        if axis not in (-1, len(self.tensors[xint].shape) - 1):
            return "it is not over the last axis (the unit normalizes rows)"
        return ""

    def on_QLinearMul(self, node: Any) -> None:
        """QOperator (com.microsoft): an int8 tensor times a constant scalar folds into the store scale of the layer
        that writes it, as a QDQ Mul does; anything else runs on the host."""
        i = list(node.input)
        x, c = (0, 3) if i[3] in self.consts else (3, 0)
        xq, yq = self.qparams(node, i[x + 1], i[x + 2], "input"), self.qparams(node, i[6], i[7] if len(i) > 7 else None,
                                                                                 "the output")
        if i[c] in self.consts and i[x] not in self.consts and np.size(self.consts[i[c]]) == 1:
            cq = self.qparams(node, i[c + 1], i[c + 2], "the constant")
            factor = (float(np.ravel(self.consts[i[c]])[0]) - cq.zero_point) * cq.scale
            if self.fold_scale(node, (i[x], xq), i[x], factor, node.output[0], yq):
                return
        self.qlinear_host(node)

    def on_QLinearSoftmax(self, node: Any) -> None:
        """QOperator (com.microsoft): on the normalization unit where a QDQ Softmax would be."""
        i = list(node.input)
        xq, yq = self.qparams(node, i[1], i[2], "input"), self.qparams(node, i[3], i[4] if len(i) > 4 else None,
                                                                       "the output")
        info = self.tensors.get(i[0])
        last = node_attrs(node).get("axis", -1) in (-1, len(info.shape) - 1) if info else False
        if last and xq.dtype == "int8" and unit_writes_softmax(yq):
            self.softmax(node, (i[0], xq), node.output[0], yq)
        else:
            self.qlinear_host(node)

    def rows_of(self, node: Any, xname: str) -> tuple[tuple[int, ...], int, int]:
        shape = self.shape(node, xname)
        return shape, math.prod(shape[:-1]), shape[-1]

    def layernorm(self, node: Any, x: tuple[str, Quant], gamma: np.ndarray, beta: np.ndarray, out: str,
                  yq: Quant) -> None:
        (xname, xq), ys = x, yq.scale
        shape, rows, cols = self.rows_of(node, xname)
        gamma = np.broadcast_to(np.asarray(gamma, np.float64), (cols,))
        beta = np.broadcast_to(np.asarray(0.0 if beta is None else beta, np.float64), (cols,))
        feed = {"X": Feed(xname, "native", (rows, cols))}
        if not beta.any() and np.all(gamma == gamma[0]) and gamma[0] > 0:
            op = layernorm(rows, cols, scale=self.normal(node, "gamma / y_scale", gamma[0] / ys), in_dtype="int8")
            self.accel(node, op, feed, {}, out, yq, "native", shape)
            return
        if not gamma.any():
            raise self.fail(node, "gamma is all zeros: the output is beta alone, no normalization")
        step = normalized_step(gamma, beta, ys, cols)
        mid = f"{out}__normalized"
        self.accel(node, layernorm(rows, cols, scale=1 / step, in_dtype="int8"), feed, {}, mid, Quant(step),
                   "native", shape)
        w_scale = float(np.abs(gamma).max()) / 127
        weight = np.rint(gamma / w_scale).astype(np.int8).reshape(1, 1, cols)
        bias = self.int32(node, "beta at the depthwise's accumulator step", np.rint(beta / (step * w_scale)))
        affine = depthwise_conv2d(1, rows, 1, cols, kernel=1, padding=0, bias="channel",
                                  scale=self.normal(node, "the affine's requantization scale", step * w_scale / ys))
        layer = AccelLayer(f"{node.name}_affine", affine, {"input": Feed(mid, "native", (1, rows, 1, cols))},
                           {"weight": weight, "bias": bias}, out, 1, (node.name,))
        self.layers.append(layer)
        self.add_tensor(replace(self.tensors[mid], name=out, scale=ys), layer)

    def gelu(self, node: Any, x: tuple[str, Quant], out: str, yq: Quant) -> None:
        (xname, xq) = x
        shape, rows, cols = self.rows_of(node, xname)
        op = igelu(rows, cols, input_scale=xq.scale, scale=self.normal(node, "1 / y_scale", 1 / yq.scale))
        self.accel(node, op, {"X": Feed(xname, "native", (rows, cols))}, {}, out, yq, "native", shape)

    def fold_scale(self, node: Any, x: tuple[str, Quant], dq: str, factor: float, out: str, yq: Quant) -> bool:
        """Mul(x, positive constant) into the store scale of the layer that writes x alone, if it can take it."""
        xname, xq = x
        prod = self.sole_output(xname, dq)
        if prod is None or prod.op.KIND not in ("matmul", "conv2d", "depthwise", "resadd") or factor <= 0 \
                or getattr(prod.op, "activation", "none") not in ("none", "relu") or np.ndim(prod.op.scale) \
                or getattr(prod.op, "out_dtype", "int8") != "int8" or not (xq.plain and yq.plain):
            return False
        scale = float(np.float32(prod.op.scale)) * xq.scale * factor / yq.scale
        op = replace(prod.op, scale=self.normal(node, "the folded requantization scale", scale))
        self.refold(prod, xname, op, prod.constants, node, out, yq)
        return True

    def refold(self, prod: AccelLayer, xname: str, op: Any, consts: dict, node: Any, out: str, yq: Quant) -> None:
        fused = replace(prod, op=op, constants=consts, output=out, nodes=(*prod.nodes, node.name))
        self.layers[self.layers.index(prod)] = fused
        self.add_tensor(replace(self.tensors.pop(xname), name=out, scale=yq.scale), fused)

    def scale_on_host(self, node: Any, x: tuple[str, Quant], factor: float, out: str, yq: Quant) -> None:
        """A Mul by a constant that no layer could take: requantized on the host."""
        xname, xq = x
        fn = host_ops.requantize((xq.scale * factor, xq.zero_point), yq.host())
        why = ("the layer that writes its input cannot take the scale (other readers, an activation, a zero point, "
               "or not a conv, matmul or resadd)")
        self.host_layer(HostLayer(node.name, "Mul", (xname,), {}, {}, (out,), fn, why=why), self.shape(node, xname), yq)
