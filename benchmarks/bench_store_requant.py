"""The store unit's extensions, which Gemmini's store unit lacks, against the host epilogue: requantization
(store_requant: an output offset and a uint8 clip) on small quantized models with zero points, and column
scales (store_col_scales: one scale per output channel) on per-channel quantized ones.

    python benchmarks/bench_store_requant.py [--models mobilenetv2-mini mobilenetv2-32] [--forms qdq-defaults ...]
                                             [--backend verilator] [--config tiny]
                                             [--extensions store_requant store_col_scales]

Each model is quantized by onnxruntime in each form and run twice, one row each: on ``--config`` (its layers
that need an extension write int32 and a ``host:Requantize`` epilogue requantizes) and on the same hardware with
``--extensions`` on (``tk.from_onnx(..., hw=...)`` lets the store unit requantize them). The columns are
bench_quant_forms.py's: off / ties / max against onnxruntime, cycles, and the host layers and their wall time.
For the column scales on asymmetric models, give ``--config`` a TOML with ``store_requant = true``, so that the
two rows differ in the column scales alone. With ``store_col_scales`` among the extensions, it first prints what
loading the scale vector costs: a conv and a matmul under one schedule, with one scale and with a vector of
equal scales (the same outputs).
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import toolkit as tk  # noqa: E402
from benchmarks.bench_quant_forms import HEADER, row  # noqa: E402
from benchmarks.onnx_models import mobilenetv2, quant_forms, quantize  # noqa: E402
from toolkit.cli.net import random_inputs  # noqa: E402

# small models with zero points everywhere; MobileNetV2's pointwise convs and classifier requantize in the store
# unit, its padded 3x3 convs (the input zero point's fold varies at the borders) stay on the host
MODELS = {
    "mobilenetv2-mini": lambda: mobilenetv2(image=16, classes=10, blocks=((1, 16, 1, 1), (6, 24, 2, 2))),
    "mobilenetv2-32": lambda: mobilenetv2(image=32, classes=10),
}
FORMS = ("qdq-defaults", "qdq-uint8", "qoperator-defaults")
# quantize_static's per-channel weights with its default (asymmetric) activations, beside quant_forms' symmetric one
PER_CHANNEL = {"qdq-per-channel-defaults": ("QDQ", {"extra_options": {}, "per_channel": True})}
EXTENSIONS = ("store_requant", "store_col_scales")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", default=["mobilenetv2-mini"], choices=list(MODELS))
    p.add_argument("--forms", nargs="+", default=list(FORMS), choices=[*quant_forms(), *PER_CHANNEL])
    p.add_argument("--backend", choices=("functional", "verilator"), default="verilator")
    p.add_argument("--config", default="tiny", help="a preset or a TOML file, without the extension")
    p.add_argument("--extensions", nargs="+", default=["store_requant"], choices=EXTENSIONS,
                   help="the store-unit extensions the second row of each form turns on")
    p.add_argument("--out", default="build/onnx_requant", help="where the quantized models are cached")
    return p.parse_args(argv)


def scale_load_cost(hw: tk.HardwareConfig, backend: str) -> None:
    """Cycles of ops with one scale against the same ops, same schedule, with a vector of equal scales."""
    for one in (tk.conv2d(1, 8, 8, 16, 96, kernel=1, padding=0, scale=0.02), tk.matmul(64, 64, 64, scale=0.02)):
        ((shape, _),) = one.output_specs().values()
        vec = dataclasses.replace(one, scale=(0.02,) * shape[-1])
        schedule, inputs = tk.default_schedule(one, hw), one.random_inputs(0)
        prog = tk.compile(vec, hw, schedule=schedule)
        a = tk.run(tk.compile(one, hw, schedule=schedule), inputs, backend=backend)
        b = tk.run(prog, inputs, backend=backend)
        same = all((a.outputs[k] == b.outputs[k]).all() for k in a.outputs)
        print(f"{one.KIND:8s} one scale {a.cycles or 0:>9,} cycles, scale vector {b.cycles or 0:>9,} "
              f"({(b.cycles or 0) / (a.cycles or 1):.3f}x), {prog.counts()['config_st_scales']} config_st_scales "
              f"words, same outputs: {same}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    base = tk.HardwareConfig.resolve(args.config)
    ext = dataclasses.replace(base, **dict.fromkeys(args.extensions, True), name=f"{base.name}_ext")
    forms = {**quant_forms(), **PER_CHANNEL}
    if ext.store_col_scales:
        scale_load_cost(ext, args.backend)
    print(f"{args.backend} backend; each form on {base.name} (host epilogue) then {ext.name} (store unit)")
    print(HEADER)
    for model in args.models:
        proto = MODELS[model]()
        for form in args.forms:
            path = quantize(proto, Path(args.out) / f"{model}-{form}.onnx", forms[form][0], **forms[form][1])
            for hw in (base, ext):
                net = tk.from_onnx(path, hw=hw)
                t0 = time.perf_counter()
                res = tk.run_network(net, random_inputs(net, 0), args.backend, hw=hw)
                print(row(model, f"{form}{'+ext' if hw is ext else ''}", net, res, time.perf_counter() - t0),
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
