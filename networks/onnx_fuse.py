"""LayerNorm and GELU as exporters decompose them, found in a quantized graph and written back as the single
LayerNormalization and Gelu nodes the importer maps onto the normalization unit.

PyTorch's exporter writes LayerNorm (before opset 17) as ReduceMean, Sub, Pow, ReduceMean, Add (epsilon),
Sqrt, Div, then Mul (gamma) and Add (beta), and GELU as Div (by sqrt 2), Erf, Add (1), Mul (by x), Mul
(by 0.5), in any order of the last two Muls. onnxruntime's quantize_static puts QuantizeLinear ->
DequantizeLinear pairs after some of them (the variance, the normalized value, erf, ...); inside a pattern a
pair only rounds an intermediate value, which the unit's integer kernels compute their own way, so the fused
node drops it. A pattern matches only where every value inside it is read by the pattern alone, and its
constants are what the function needs (axes the last, an exponent of 2, sqrt 2 and 1 and 0.5).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

_PAIR = ("QuantizeLinear", "DequantizeLinear")


@dataclass
class _Graph:
    """The graph's nodes with who produces and who reads each tensor, and its constants' float values."""

    proto: Any
    producer: dict[str, Any] = field(default_factory=dict)
    readers: dict[str, list] = field(default_factory=dict)
    consts: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from onnx import numpy_helper
        g = self.proto.graph
        self.consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
        for node in g.node:
            for t in node.output:
                self.producer[t] = node
            for t in node.input:
                self.readers.setdefault(t, []).append(node)
        self.outputs = {o.name for o in g.output}

    def value(self, t: str) -> np.ndarray | None:
        """A constant's float value: an initializer, a Constant node, or a DequantizeLinear of one."""
        if t in self.consts:
            return self.consts[t]
        node = self.producer.get(t)
        if node is not None and node.op_type == "Constant":
            from onnx import helper, numpy_helper
            return numpy_helper.to_array(helper.get_attribute_value(node.attribute[0]))
        if node is not None and node.op_type == "DequantizeLinear" and node.input[0] in self.consts:
            q, scale = self.consts[node.input[0]], self.consts.get(node.input[1])
            zp = self.consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else 0
            return None if scale is None or np.size(scale) != 1 else \
                (q.astype(np.float64) - np.ravel(zp)[0]) * float(np.ravel(scale)[0])
        return None

    def sole_reader(self, t: str) -> Any | None:
        readers = self.readers.get(t, [])
        return readers[0] if len(readers) == 1 and t not in self.outputs else None


@dataclass
class _Match:
    """A walk through a pattern: the nodes it took (pairs included) and the constants it read."""

    graph: _Graph
    nodes: list = field(default_factory=list)

    def through(self, t: str) -> list:
        """The nodes reading value ``t``, a QuantizeLinear -> DequantizeLinear pair (read by nothing else) seen
        through: its DequantizeLinear's readers stand for it."""
        q = self.graph.sole_reader(t)
        if q is not None and q.op_type == _PAIR[0]:
            dq = self.graph.sole_reader(q.output[0])
            if dq is not None and dq.op_type == _PAIR[1]:
                self.nodes += [q, dq]
                return self.through(dq.output[0])
        return [(n, t) for n in self.graph.readers.get(t, [])] if t not in self.graph.outputs else []

    def one(self, t: str, op_type: str) -> tuple[Any, str] | None:
        """The node of ``op_type`` that alone reads value ``t`` (through pairs), with the name it reads it by."""
        found = self.through(t)
        if len(found) == 1 and found[0][0].op_type == op_type:
            self.nodes.append(found[0][0])
            return found[0]
        return None

    def other(self, node: Any, name: str) -> np.ndarray | None:
        """The constant ``node`` reads beside ``name``."""
        rest = [t for t in node.input if t != name]
        return self.graph.value(rest[0]) if len(rest) == 1 else None


def _near(value: np.ndarray | None, want: float) -> bool:
    return value is not None and np.size(value) == 1 and math.isclose(float(np.ravel(value)[0]), want, rel_tol=1e-3)


def _last_axis(g: _Graph, node: Any, rank: int | None) -> bool:
    from onnx import helper
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    axes = attrs.get("axes") if len(node.input) < 2 else g.value(node.input[1])
    if axes is None or np.size(axes) != 1 or not attrs.get("keepdims", 1):
        return False
    axis = int(np.ravel(axes)[0])
    return axis == -1 or rank is not None and axis == rank - 1


def fuse_decomposed(proto: Any) -> Any:
    """A copy of ``proto`` with each decomposed LayerNorm and GELU (see the module's docstring) one node, or
    ``proto`` itself where none is found."""
    fused = type(proto)()
    fused.CopyFrom(proto)
    found = False
    while _fuse_one(fused):
        found = True
    return fused if found else proto


def _fuse_one(proto: Any) -> bool:
    """Fuse the first decomposed LayerNorm or GELU found; whether one was."""
    g = _Graph(proto)
    ranks = _ranks(proto)
    for x in list(g.readers):
        for matcher in (_layernorm, _gelu):
            m = _Match(g)
            found = matcher(m, x, ranks.get(x))
            if found is not None and _contained(g, x, m.nodes, found[0]):
                _replace(proto, m.nodes, found)
                return True
    return False


def _ranks(proto: Any) -> dict[str, int]:
    return {vi.name: len(vi.type.tensor_type.shape.dim) for vi in (*proto.graph.input, *proto.graph.value_info)
            if vi.type.tensor_type.HasField("shape")}


def _contained(g: _Graph, x: str, nodes: list, new: Any) -> bool:
    """Every value the pattern computes is read inside it (its last output aside), and x is read by it alone."""
    inside = {id(n) for n in nodes}
    if any(id(r) not in inside for r in g.readers.get(x, [])):
        return False
    last = new.output[0]
    return all(id(r) in inside for n in nodes for t in n.output if t != last for r in g.readers.get(t, [])) \
        and not any(t in g.outputs for n in nodes for t in n.output if t != last)


def _replace(proto: Any, nodes: list, found: tuple) -> None:
    from onnx import numpy_helper
    new, consts = found
    drop = {id(n) for n in nodes}
    g = proto.graph
    at = max(i for i, n in enumerate(g.node) if id(n) in drop)
    kept = [n for i, n in enumerate(g.node) if id(n) not in drop or i == at]
    index = next(i for i, n in enumerate(kept) if id(n) in drop)
    kept[index] = new
    for name, value in consts.items():
        g.initializer.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
    del g.node[:]
    g.node.extend(kept)


def _square(m: _Match, node: Any, name: str) -> bool:
    if node.op_type == "Pow":
        return node.input[0] == name and _near(m.graph.value(node.input[1]), 2.0)
    return node.op_type == "Mul" and node.input[0] == node.input[1] == name


def _layernorm(m: _Match, x: str, rank: int | None) -> tuple | None:
    """ReduceMean, Sub, Pow, ReduceMean, Add eps, Sqrt, Div [, Mul gamma] [, Add beta] from x."""
    from onnx import helper
    g = m.graph
    readers = {id(n): n for n in g.readers.get(x, [])}.values()
    mean = next((n for n in readers if n.op_type == "ReduceMean" and _last_axis(g, n, rank)), None)
    sub = next((n for n in readers if n.op_type == "Sub" and n.input[0] == x), None)
    if mean is None or sub is None or len(readers) != 2:
        return None
    m.nodes += [mean, sub]
    if m.one(mean.output[0], "Sub") != (sub, sub.input[1]):
        return None
    dev = {id(n): (n, t) for n, t in m.through(sub.output[0])}.values()
    square = next(((n, t) for n, t in dev if _square(m, n, t)), None)
    div = next(((n, t) for n, t in dev if n.op_type == "Div" and n.input[0] == t), None)
    if square is None or div is None or len(dev) != 2:
        return None
    m.nodes += [square[0], div[0]]
    var = m.one(square[0].output[0], "ReduceMean")
    eps = var and _last_axis(g, var[0], rank) and m.one(var[0].output[0], "Add")
    sqrt = eps and m.one(eps[0].output[0], "Sqrt")
    epsilon = m.other(*eps) if eps else None
    if not sqrt or m.one(sqrt[0].output[0], "Div") != (div[0], div[0].input[1]) or epsilon is None \
            or np.size(epsilon) != 1:
        return None
    out, gamma, beta = div[0].output[0], np.float32(1), np.float32(0)
    for op_type in ("Mul", "Add"):
        step = _optional(m, out, op_type)
        if step is not None:
            value = m.other(*step)
            if value is None:
                break
            out = step[0].output[0]
            gamma, beta = (value, beta) if op_type == "Mul" else (gamma, value)
    names = {f"{out}_gamma": gamma, f"{out}_beta": beta}
    node = helper.make_node("LayerNormalization", [x, *names], [out], name=f"{mean.name or out}_layernorm", axis=-1,
                            epsilon=float(np.ravel(epsilon)[0]))
    return node, names


def _optional(m: _Match, t: str, op_type: str) -> tuple | None:
    """The next node of the walk if it is ``op_type``, else nothing taken."""
    before = len(m.nodes)
    found = m.one(t, op_type)
    if found is None:
        del m.nodes[before:]
    return found


def _gelu(m: _Match, x: str, rank: int | None) -> tuple | None:
    """x * 0.5 * (1 + erf(x / sqrt 2)), the two Muls in any order, from x."""
    from onnx import helper
    g = m.graph
    scale = next((n for n in g.readers.get(x, []) if _over_sqrt2(m, n, x)), None)
    if scale is None:
        return None
    m.nodes.append(scale)
    erf = m.one(scale.output[0], "Erf")
    one = erf and m.one(erf[0].output[0], "Add")
    if not one or not _near(m.other(*one), 1.0):
        return None
    done = _times_x_and_half(m, one[0].output[0], x)
    if done is None:
        return None
    return helper.make_node("Gelu", [x], [done], name=f"{scale.name or done}_gelu"), {}


def _over_sqrt2(m: _Match, node: Any, x: str) -> bool:
    if node.input[0] != x:
        return False
    if node.op_type == "Div":
        return _near(m.graph.value(node.input[1]), math.sqrt(2))
    return node.op_type == "Mul" and _near(m.graph.value(node.input[1]), 1 / math.sqrt(2))


def _times_x_and_half(m: _Match, t: str, x: str) -> str | None:
    """The output of (1 + erf) times x and times 0.5: Mul(Mul(x, t), 0.5), Mul(Mul(x, 0.5), t) or
    Mul(x, Mul(t, 0.5))."""
    first = m.one(t, "Mul")
    if first is None:
        return None
    node, name = first
    other = [i for i in node.input if i != name]
    if len(other) != 1:
        return None
    if _near(m.graph.value(other[0]), 0.5) or other[0] == x:     # Mul(t, 0.5) then x, or Mul(x, t) then 0.5
        last = m.one(node.output[0], "Mul")
        want: Callable[[str], bool] = (lambda o: o == x) if other[0] != x else \
            (lambda o: _near(m.graph.value(o), 0.5))
        rest = [i for i in last[0].input if i != last[1]] if last else []
        return last[0].output[0] if len(rest) == 1 and want(rest[0]) else None
    half = _back(m, other[0])                                   # Mul(Mul(x, 0.5), t)
    if half is None or half.op_type != "Mul" or x not in half.input:
        return None
    if not _near(m.graph.value([i for i in half.input if i != x][0]), 0.5):
        return None
    m.nodes.append(half)
    return node.output[0]


def _back(m: _Match, t: str) -> Any | None:
    """The node that computes value ``t``, a QuantizeLinear -> DequantizeLinear pair seen through."""
    node = m.graph.producer.get(t)
    if node is not None and node.op_type == _PAIR[1]:
        q = m.graph.producer.get(node.input[0])
        if q is not None and q.op_type == _PAIR[0]:
            m.nodes += [q, node]
            return m.graph.producer.get(q.input[0])
    return node
