"""Golden cycle counts: a fixed set of programs whose RTL cycle counts are recorded.

    python tests/golden_cycles.py            # compare with tests/golden_cycles.json, print deltas
    python tests/golden_cycles.py --update   # re-record (make golden)

A moved count is not necessarily a bug (the RTL, the templates or the default
schedule changed on purpose); the point is that it never moves unnoticed.
The programs come from the toolkit's lowering and run on the verilator backend.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import toolkit as tk
from simulators import verilator
from toolkit.kinds import gemmini_flat_schedule

GOLDEN_FILE = Path(__file__).resolve().with_suffix(".json")

# name -> (preset, op kind, args, kwargs, schedule): the schedule is "gemmini-flat" (the earlier port
# of Gemmini's library: its tile sizes in our own flat instruction stream), "default" (the toolkit's
# pipelined heuristic) or knobs over the gemmini-flat schedule
CASES: dict[str, tuple[str, str, tuple, dict, str | dict]] = {
    "tiny/matmul_10x7x9_relu": ("tiny", "matmul", (10, 7, 9), dict(bias="row", activation="relu", scale=0.05),
                                "gemmini-flat"),
    "tiny/matmul_32x32x32": ("tiny", "matmul", (32, 32, 32), {}, "gemmini-flat"),
    "tiny/matmul_32x32x64_single": ("tiny", "matmul", (32, 32, 64), {}, dict(double_buffer=False)),
    "tiny/matmul_16x16x64_one_bank": ("tiny", "matmul", (16, 16, 64), {}, dict(a_bank=0, b_bank=0)),
    "tiny/matmul_13x5x21_int32": ("tiny", "matmul", (13, 5, 21), dict(bias="full", out_dtype="int32"), "gemmini-flat"),
    "tiny/conv_1x6x6x3x5": ("tiny", "conv2d", (1, 6, 6, 3, 5), dict(bias="channel", activation="relu", scale=0.02),
                            "gemmini-flat"),
    "gemmini-alone/matmul_64x64x64": ("gemmini-alone", "matmul", (64, 64, 64), {}, "gemmini-flat"),
    "gemmini-alone/matmul_100x50x70_relu": ("gemmini-alone", "matmul", (100, 50, 70),
                                      dict(bias="row", activation="relu", scale=0.03), "gemmini-flat"),
    # the toolkit's default: software pipeline and bank-split buffers
    "tiny/matmul_32x32x64_default": ("tiny", "matmul", (32, 32, 64), dict(scale=0.01), "default"),
    "tiny/matmul_13x5x21_int32_default": ("tiny", "matmul", (13, 5, 21), dict(bias="full", out_dtype="int32"),
                                          "default"),
    "tiny/conv_1x8x8x6x9_s2_default": ("tiny", "conv2d", (1, 8, 8, 6, 9), dict(stride=2, bias="channel",
                                                                               scale=0.02), "default"),
    "tiny/depthwise_1x7x7x6_default": ("tiny", "depthwise_conv2d", (1, 7, 7, 6), dict(scale=0.05), "default"),
    "gemmini-alone/matmul_256x256x256_default": ("gemmini-alone", "matmul", (256, 256, 256), dict(scale=0.001),
                                                 "default"),
    # Gemmini's library: LOOP_WS / LOOP_CONV_WS words, unrolled by the RTL's loop units
    "tiny/matmul_30x20x70_library": ("tiny", "matmul", (30, 20, 70), dict(bias="row", activation="relu", scale=0.05),
                                     "gemmini"),
    "tiny/conv_1x8x8x6x9_s2_library": ("tiny", "conv2d", (1, 8, 8, 6, 9), dict(stride=2, bias="channel",
                                                                               scale=0.02), "gemmini"),
    "gemmini-alone/matmul_256x256x256_library": ("gemmini-alone", "matmul", (256, 256, 256), dict(scale=0.001),
                                                 "gemmini"),
    # the same on the SoC (the host that issues each word, the L2 and DRAM behind the DMA)
    "gemmini/matmul_64x64x64": ("gemmini", "matmul", (64, 64, 64), {}, "gemmini-flat"),
    "gemmini/matmul_256x256x256_default": ("gemmini", "matmul", (256, 256, 256), dict(scale=0.001), "default"),
    "gemmini/matmul_256x256x256_library": ("gemmini", "matmul", (256, 256, 256), dict(scale=0.001), "gemmini"),
    "gemmini/conv_1x14x14x64x64_default": ("gemmini", "conv2d", (1, 14, 14, 64, 64), dict(bias="channel",
                                                                                         scale=0.01), "default"),
    "gemmini/conv_1x14x14x64x64_library": ("gemmini", "conv2d", (1, 14, 14, 64, 64), dict(bias="channel",
                                                                                         scale=0.01), "gemmini"),
    # max pooling in the store unit: alone, and fused into a conv's LOOP_CONV_WS
    "tiny/maxpool_1x7x7x5_k3s2p1_default": ("tiny", "maxpool2d", (1, 7, 7, 5), dict(kernel=3, stride=2, padding=1),
                                            "default"),
    "tiny/conv_1x8x8x3x5_pool_library": ("tiny", "conv2d", (1, 8, 8, 3, 5),
                                         dict(bias="channel", activation="relu", scale=0.05, pool=(3, 2, 1)),
                                         "gemmini"),
    # the normalization unit: its statistics passes and finals, LOOP_WS's normalizing store walk, I-GELU
    "tiny/layernorm_7x13_default": ("tiny", "layernorm", (7, 13), {}, "default"),
    "tiny/softmax_9x20_library": ("tiny", "softmax", (9, 20), dict(input_scale=0.05), "gemmini"),
    "tiny/matmul_19x24x13_softmax_library": ("tiny", "matmul", (19, 24, 13),
                                             dict(activation="softmax", input_scale=0.02), "gemmini"),
    "tiny/matmul_10x9x8_igelu_default": ("tiny", "matmul", (10, 9, 8),
                                         dict(activation="igelu", input_scale=0.02, scale=-0.001), "default"),
    "gemmini/layernorm_128x256_default": ("gemmini", "layernorm", (128, 256), dict(scale=16.0), "default"),
}


def measure(name: str) -> int:
    preset, kind, args, kwargs, knobs = CASES[name]
    hw = tk.HardwareConfig.preset(preset)
    op = getattr(tk, kind)(*args, **kwargs)
    schedule = gemmini_flat_schedule(op, hw).replace(**knobs) if isinstance(knobs, dict) else knobs
    prog = tk.compile(op, hw, schedule=schedule)
    inputs = op.random_inputs(seed=0)
    res = verilator.run(prog, inputs, timeout=600)
    for out, want in op.reference(inputs).items():
        if not (res.outputs[out] == want).all():
            raise AssertionError(f"golden case {name}: output {out} differs from the reference")
    return int(res.cycles)


def measure_all(names: list[str] | None = None) -> dict[str, int]:
    return {name: measure(name) for name in (names or list(CASES))}


def load() -> dict[str, int]:
    return json.loads(GOLDEN_FILE.read_text()) if GOLDEN_FILE.exists() else {}


def deltas(recorded: dict[str, int], measured: dict[str, int]) -> list[str]:
    lines = []
    for name, cycles in measured.items():
        old = recorded.get(name)
        if old is None:
            lines.append(f"{name}: {cycles} cycles (not recorded)")
        elif old != cycles:
            lines.append(f"{name}: {old} -> {cycles} cycles ({cycles - old:+d}, {100 * (cycles - old) / old:+.2f} %)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tests/golden_cycles.py", description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="re-record tests/golden_cycles.json")
    parser.add_argument("cases", nargs="*", help=f"case names (default all: {', '.join(CASES)})")
    args = parser.parse_args(argv)
    measured = measure_all(args.cases or None)
    recorded = load()
    if args.update:
        recorded = {name: cycles for name, cycles in recorded.items() if name in CASES}   # drop retired cases
        recorded.update(measured)
        GOLDEN_FILE.write_text(json.dumps(dict(sorted(recorded.items())), indent=2) + "\n")
        for name, cycles in measured.items():
            print(f"{name}: {cycles}")
        print(f"recorded {len(measured)} cases in {GOLDEN_FILE}")
        return 0
    moved = deltas(recorded, measured)
    for name, cycles in measured.items():
        print(f"{name}: {cycles}" + ("" if recorded.get(name) == cycles else "   <-- moved"))
    if moved:
        print("cycle counts moved:\n  " + "\n  ".join(moved))
        return 1
    print("all golden cycle counts match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
