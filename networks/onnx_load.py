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
    check_onnxruntime_loads(proto, name)
    return proto, name


def check_onnxruntime_loads(proto: Any, name: str) -> None:
    """onnxruntime is the reference every run is compared with: a model it refuses (duplicate node
    names, types its kernels do not take, ...) is refused here, with its reason."""
    from .ort_reference import session
    try:
        session(proto.SerializeToString(), optimize=False)
    except Exception as exc:  # noqa: BLE001  (onnxruntime's error types are its own, from its C++ core)
        reason = re.sub(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ", "", str(exc))
        raise ValueError(f"model {name}: onnxruntime refuses it: {reason}") from None
