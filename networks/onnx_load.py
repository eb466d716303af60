"""Loading an ONNX model for import: parsed, checked, its shapes inferred, and loadable by onnxruntime (the
reference every run is compared with)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any


def load_model(model: Any) -> tuple[Any, str]:
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
    check_graph(proto.graph, name)
    try:
        onnx.checker.check_model(proto)
    except Exception as exc:  # the checker raises several types; all mean the same to the user
        raise ValueError(f"model {name}: not a valid ONNX model (truncated file?): {' '.join(str(exc).split())}") \
            from None
    try:
        proto = onnx.shape_inference.infer_shapes(proto, strict_mode=True)
    except Exception as exc:  # noqa: BLE001  (as above; its message names the node)
        raise ValueError(f"model {name}: its shapes or types do not fit together: {exc}") from None
    if not proto.graph.node:
        raise ValueError(f"model {name}: the graph has no nodes (truncated file?)")
    check_onnxruntime_loads(proto, name)
    return proto, name


def check_graph(graph: Any, name: str) -> None:
    """The graph's data flow, each fault in one line that names a node: an input that no graph input,
    initializer or node gives, a cycle, a node listed before one whose output it reads (the onnx
    checker says "not topologically sorted" to all three)."""
    given = {t.name for t in (*graph.input, *graph.initializer)} | {t.values.name for t in graph.sparse_initializer}
    producer: dict[str, int] = {}   # each tensor's first writer (the checker refuses a second one)
    for i, node in enumerate(graph.node):
        for out in node.output:
            producer.setdefault(out, i)
    for i, node in enumerate(graph.node):
        for tensor in node.input:
            if tensor and tensor not in given and tensor not in producer:
                raise ValueError(f"model {name}: {_node(graph, i)}: its input {tensor!r} is no graph input, "
                                 "initializer or node output (a missing initializer?)")
    cycle = _cycle(graph.node, producer)
    if cycle:
        first = cycle.index(min(cycle))
        ring = cycle[first:] + cycle[:first + 1]
        raise ValueError(f"model {name}: {_node(graph, ring[0])} reads its own output through a cycle: "
                         f"{' -> '.join(_node(graph, i) for i in ring)}")
    for i, node in enumerate(graph.node):
        late = [t for t in node.input if producer.get(t, -1) > i]
        if late:
            raise ValueError(f"model {name}: {_node(graph, i)} reads {late[0]!r}, which "
                             f"{_node(graph, producer[late[0]])}, listed after it, gives: an ONNX graph lists its "
                             "nodes in an order they can run in")


def _node(graph: Any, i: int) -> str:
    node = graph.node[i]
    return f"node {node.name!r} ({node.op_type})" if node.name else f"node #{i} ({node.op_type})"


def _cycle(nodes: Any, producer: dict[str, int]) -> list[int]:
    """The first cycle found among the nodes: their indices, each giving the next its input (the last
    the first's), or [] where there is none. A walk from each node up its inputs, not recursive."""
    state = [0] * len(nodes)   # 0: not seen; 1: on the path walked now; 2: on no cycle
    for start in range(len(nodes)):
        if state[start]:
            continue
        state[start], path, inputs = 1, [start], [iter(nodes[start].input)]
        while path:
            tensor = next(inputs[-1], None)
            if tensor is None:
                state[path.pop()] = 2
                inputs.pop()
                continue
            j = producer.get(tensor)
            if j is None or state[j] == 2:
                continue
            if state[j] == 1:
                return path[path.index(j):][::-1]
            state[j] = 1
            path.append(j)
            inputs.append(iter(nodes[j].input))
    return []


def check_onnxruntime_loads(proto: Any, name: str) -> None:
    """onnxruntime is the reference every run is compared with: a model it refuses (duplicate node
    names, types its kernels do not take, ...) is refused here, with its reason."""
    from .ort_reference import session
    try:
        session(proto.SerializeToString(), optimize=False)
    except Exception as exc:  # noqa: BLE001  (onnxruntime's error types are its own, from its C++ core)
        reason = re.sub(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ", "", str(exc))
        raise ValueError(f"model {name}: onnxruntime refuses it: {reason}") from None
