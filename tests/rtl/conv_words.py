"""Hand-built LOOP_CONV_WS programs for the conv loop unroller's tests (tests/rtl/cocotb_loop_conv.py,
tests/test_loop_conv_rtl.py): the words gemmini.h's tiled_conv / tiled_conv_dw (ucb-bar/gemmini-rocc-tests
180c468, ~2168 / ~2460) and sp_tiled_conv (~1348) issue for given tile sizes, without pooling, written
out here again (not taken from toolkit/), and a numpy reference of the conv.

A conv is a dict: batch, in_h, in_w, in_c, out_c, k (square kernel), stride, pad, and optionally
dilation (kernel dilation), dw (depthwise: out_c = in_c), bias (bool), relu (bool), scale,
first_layer (gemmini.h's HAS_FIRST_LAYER_OPTIMIZATIONS: max_pixels_per_row > 1 when few input
channels), reuse (tiled_conv's a_reuse / b_reuse scratchpad ids); and the tile sizes: batches,
porows, pocols, pochs, krows, kcols, kchs (default: the whole conv, one loop).

LoopConv's training flags (one loop, the whole conv): wrot180 (the kernel rotated 180 degrees),
input_dilation=2 (a zero between input pixels; stride 1), and the layouts trans_input_3120 (input
stored [C][H][W][N]), trans_weight_1203 ([C][KH][KW][OC]), trans_weight_0132 ([KH][KW][OC][C]),
trans_output_1203 (output stored [OH][OW][N][OC]).
"""
from __future__ import annotations

import itertools

import numpy as np

from isa import ConfigEx, ConfigSt, Fence, HardwareConfig, Program
from isa.buffers import layout
from isa.loop_words import (LoopConvWs, LoopConvWsConfig1, LoopConvWsConfig2, LoopConvWsConfig3, LoopConvWsConfig4,
                            LoopConvWsConfig5, LoopConvWsConfig6)
from isa.numerics import acc_to_int8


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


FLAGS = ("wrot180", "trans_output_1203", "trans_weight_1203", "trans_weight_0132", "trans_input_3120")

# where each layout flag keeps a tensor: its (N, H, W, C) / (KH, KW, C, OC) axes in stored order
_STORED = {"trans_input_3120": ("input", (3, 1, 2, 0)), "trans_weight_1203": ("weight", (2, 0, 1, 3)),
           "trans_weight_0132": ("weight", (0, 1, 3, 2)), "trans_output_1203": ("output", (1, 2, 0, 3))}


# LoopConv's training flags, each a whole conv in one loop sized to the tiny preset (its outputs fit half
# the accumulator)
FLAG_CONVS = {
    "wrot180": dict(batch=1, in_h=5, in_w=5, in_c=3, out_c=4, k=3, stride=1, pad=1, wrot180=True, scale=0.05),
    "trans_weight_1203": dict(batch=1, in_h=4, in_w=5, in_c=6, out_c=3, k=3, stride=1, pad=1,
                              trans_weight_1203=True, relu=True, scale=0.03),
    "trans_weight_0132": dict(batch=1, in_h=5, in_w=4, in_c=6, out_c=4, k=3, stride=2, pad=1,
                              trans_weight_0132=True, scale=0.03),
    "trans_output_1203": dict(batch=2, in_h=4, in_w=3, in_c=6, out_c=4, k=3, stride=1, pad=1,
                              trans_output_1203=True, scale=0.03),
    "trans_input_3120": dict(batch=6, in_h=2, in_w=2, in_c=6, out_c=4, k=3, stride=1, pad=1,
                             trans_input_3120=True, scale=0.03),
    "trans_input_3120_kernel_dilation": dict(batch=3, in_h=3, in_w=3, in_c=3, out_c=4, k=2, stride=1, pad=1,
                                             dilation=2, trans_input_3120=True, bias=False, scale=0.05),
    "input_dilation": dict(batch=1, in_h=3, in_w=3, in_c=3, out_c=4, k=3, stride=1, pad=1, input_dilation=2,
                           scale=0.05),
    "input_dilation_rot180_pad2": dict(batch=1, in_h=2, in_w=2, in_c=5, out_c=4, k=3, stride=1, pad=2,
                                       input_dilation=2, wrot180=True, scale=0.05),
    "input_dilation_no_pad": dict(batch=1, in_h=4, in_w=3, in_c=2, out_c=3, k=2, stride=1, pad=0,
                                  input_dilation=2, relu=True, scale=0.1),
}


def _stored_axes(c: dict, name: str) -> tuple[int, ...] | None:
    return next((axes for flag, (what, axes) in _STORED.items() if c.get(flag) and what == name), None)


def _dilated(n: int, c: dict) -> int:
    return c.get("input_dilation", 1) * (n - 1) + 1


def out_dims(c: dict) -> tuple[int, int]:
    dk = c.get("dilation", 1) * (c["k"] - 1) + 1
    return ((_dilated(c["in_h"], c) + 2 * c["pad"] - dk) // c["stride"] + 1,
            (_dilated(c["in_w"], c) + 2 * c["pad"] - dk) // c["stride"] + 1)


def downsample(c: dict) -> bool:
    return (c["stride"] == 2 and c["k"] == 1 and c["in_h"] % 2 == 0 and c["in_w"] % 2 == 0 and c["pad"] == 0
            and not c.get("dw") and c.get("dilation", 1) == 1 and c.get("input_dilation", 1) == 1
            and not c.get("trans_input_3120"))


def _tile(c: dict, name: str, whole: int) -> int:
    return c.get(name) or whole


def _loop(c: dict, hw: HardwareConfig, addrs: dict[str, int], t: dict) -> list:
    """The seven words of one tile (sp_tiled_conv's gemmini_loop_conv_ws)."""
    dim, kd, ds, dw = hw.dim, c.get("dilation", 1), downsample(c), bool(c.get("dw"))
    out_h, out_w = out_dims(c)
    kchs, pochs = (1, 1) if dw else (t["kchs"], t["pochs"])
    plain = not any(c.get(f) for f in FLAGS) and c.get("input_dilation", 1) == 1
    if c.get("first_layer", True) and plain and not ds and kd == 1 and kchs <= dim:
        pixels = min(dim // kchs, t["kcols"])
    else:
        pixels = 1
    channels = c["in_c"]
    return [
        LoopConvWsConfig1(batch_size=c["batch"], in_row_dim=c["in_h"], in_channels=channels,
                          out_channels=c["out_c"], out_row_dim=out_h, pool_out_row_dim=out_h, out_col_dim=out_w,
                          stride=c["stride"], padding=c["pad"]),
        LoopConvWsConfig2(kernel_dim=c["k"], pool_out_col_dim=out_w, pool_size=1, pool_stride=1, pool_padding=0,
                          batches=t["batches"], porows=t["porows"], pocols=t["pocols"], pochs=pochs),
        LoopConvWsConfig3(krows=t["krows"], kcols=t["kcols"], kchs=kchs, lpad=t["lpad"], rpad=t["rpad"],
                          upad=t["upad"], dpad=t["dpad"], plpad=0, in_col_dim=c["in_w"]),
        LoopConvWsConfig4(orows=t["porows"], prpad=0, pupad=0, pdpad=0, kernel_dilation=kd,
                          in_stride=channels, weight_stride=1 if dw else c["out_c"], out_stride=c["out_c"],
                          ocols=t["pocols"]),
        LoopConvWsConfig5(weights_addr=addrs["weights"], output_addr=addrs["output"]),
        LoopConvWsConfig6(bias_addr=addrs["bias"], input_addr=addrs["input"]),
        LoopConvWs(no_bias=int(not c.get("bias", True)), dw=int(dw), max_pixels_per_row=pixels,
                   a_spad_id=t.get("a_spad_id", 0), b_spad_id=t.get("b_spad_id", 0),
                   no_pool=1, downsample=int(ds), activation=0,
                   input_dilated=int(c.get("input_dilation", 1) == 2), **{f: int(c.get(f, 0)) for f in FLAGS}),
    ]


# tiled_conv's loops, outer first, each named by its tile size: batch, output rows, output columns,
# output channels, kernel rows, kernel columns, input channels
LOOPS = ("batches", "porows", "pocols", "pochs", "krows", "kcols", "kchs")


def _extents(c: dict) -> dict[str, int]:
    """What each loop walks (a depthwise conv's input channel loop runs once: its channels are its pochs)."""
    out_h, out_w = out_dims(c)
    return {"batches": c["batch"], "porows": out_h, "pocols": out_w, "pochs": c["out_c"], "krows": c["k"],
            "kcols": c["k"], "kchs": 1 if c.get("dw") else c["in_c"]}


def _reuse(c: dict, extents: dict[str, int], sizes: dict[str, int]) -> tuple[bool, bool]:
    """(a_reuse, b_reuse): tiled_conv keeps the input / weights in the scratchpad between tiles when they
    are used by at most two."""
    reuse = c.get("reuse", False) and not c.get("dw")
    n = {name: _cdiv(extents[name], sizes[name]) for name in LOOPS}
    a_reuse = reuse and n["kchs"] * n["krows"] * n["kcols"] * n["batches"] * n["porows"] * n["pocols"] <= 2
    b_reuse = reuse and n["kchs"] * n["pochs"] * n["krows"] * n["kcols"] <= 2
    return a_reuse, b_reuse


def _input_start(c: dict, at: dict[str, int]) -> tuple[int, int]:
    """The input row and column of a tile's first output pixel under its first kernel row and column."""
    kd = c.get("dilation", 1)
    return (at["porows"] * c["stride"] + at["krows"] * kd - c["pad"],
            at["pocols"] * c["stride"] + at["kcols"] * kd - c["pad"])


def _tile_shape(c: dict, extents: dict[str, int], sizes: dict[str, int], at: dict[str, int]) -> dict[str, int]:
    """The tile at ``at``: its size along each loop (the last tile of a loop is cut short) and the padding
    on each side of its input window."""
    kd, stride = c.get("dilation", 1), c["stride"]
    t = {name: min(sizes[name], extents[name] - at[name]) for name in LOOPS}
    irow, icol = _input_start(c, at)
    irows, icols = t["porows"] * stride + kd * (t["krows"] - 1), t["pocols"] * stride + kd * (t["kcols"] - 1)
    t["lpad"], t["upad"] = max(0, -icol), max(0, -irow)
    t["rpad"] = max(0, icol + icols - _dilated(c["in_w"], c))
    t["dpad"] = max(0, irow + irows - _dilated(c["in_h"], c))
    return t


def _spad_ids(at: dict[str, int], a_reuse: bool, b_reuse: bool) -> dict[str, int]:
    """The scratchpad ids under reuse: 1 for the first tile's input / weights, 2 for the others'."""
    ids = {}
    if a_reuse:
        ids["a_spad_id"] = 2 if any(at[n] for n in ("kchs", "krows", "kcols", "batches", "porows", "pocols")) else 1
    if b_reuse:
        ids["b_spad_id"] = 2 if any(at[n] for n in ("kchs", "pochs", "krows", "kcols")) else 1
    return ids


def _addresses(c: dict, bufs: dict[str, int], at: dict[str, int], t: dict[str, int], last: bool,
               a_reuse: bool, b_reuse: bool) -> dict[str, int]:
    """The DRAM addresses of a tile's words; 0 where it moves nothing: weights / input that reuse keeps
    from an earlier tile, the output before the last kernel and channel tile, the bias after the first."""
    out_h, out_w = out_dims(c)
    chs, out_c, k = c["in_c"], c["out_c"], c["k"]
    b, porow, pocol, poch, krow, kcol, kch = (at[n] for n in LOOPS)
    irow, icol = _input_start(c, at)
    pix = (b * out_h + porow) * out_w + pocol
    ipix = (b * c["in_h"] + irow + t["upad"]) * c["in_w"] + icol + t["lpad"]
    if c.get("dw"):   # channel poch of each pixel; weight (C, KH, KW)
        weights = bufs["weight"] + (poch * k + krow) * k + kcol
        inp, out = bufs["input"] + ipix * chs + poch, bufs["output"] + pix * chs + poch
    else:
        weights = bufs["weight"] + ((krow * k + kcol) * chs + kch) * out_c + poch
        inp, out = bufs["input"] + ipix * chs + kch, bufs["output"] + pix * out_c + poch
    bias_base = bufs["bias"] if c.get("bias", True) else 1   # gemmini.h: (acc_t *) 1 without a bias
    return {"weights": 0 if b_reuse and pocol + porow + b > 0 else weights,
            "input": 0 if a_reuse and poch > 0 else inp,
            "output": out if last else 0,
            "bias": bias_base + 4 * poch if krow == kcol == kch == 0 else 0}


def loop_words(c: dict, hw: HardwareConfig, bufs: dict[str, int]) -> list:
    """Every tile's words, in tiled_conv's loop order (b, porow, pocol, poch, krow, kcol, kch); the
    depthwise conv as tiled_conv_dw (a loop per channel). ``bufs``: DRAM addresses of the buffers."""
    extents = _extents(c)
    sizes = {name: 1 if c.get("dw") and name in ("pochs", "kchs") else _tile(c, name, whole)
             for name, whole in extents.items()}
    a_reuse, b_reuse = _reuse(c, extents, sizes)
    words = []
    for start in itertools.product(*(range(0, extents[name], sizes[name]) for name in LOOPS)):
        at = dict(zip(LOOPS, start))
        t = _tile_shape(c, extents, sizes, at) | _spad_ids(at, a_reuse, b_reuse)
        last = all(at[n] + sizes[n] >= extents[n] for n in ("krows", "kcols", "kchs"))   # its outputs are done
        words += _loop(c, hw, _addresses(c, bufs, at, t, last, a_reuse, b_reuse), t)
    return words


def program(c: dict, hw: HardwareConfig) -> Program:
    """config_st, config_ex (A stride: the conv stride), the loops, a fence."""
    specs = [("input", "input", "int8", _shape(c, "input")), ("weight", "input", "int8", _shape(c, "weight"))]
    if c.get("bias", True):
        specs.append(("bias", "input", "int32", (c["out_c"],)))
    specs.append(("output", "output", "int8", _shape(c, "output")))
    buffers = layout(specs)
    bufs = {name: b.addr for name, b in buffers.items()}
    bufs.setdefault("bias", 0)
    st_stride = c["batch"] * c["out_c"] if c.get("trans_output_1203") else c["out_c"]
    instructions = [ConfigSt(dram_stride=st_stride, activation=int(c.get("relu", False)),
                             acc_scale=c.get("scale", 1.0)),
                    ConfigEx(dataflow=1, a_stride=c["stride"] >> downsample(c), c_stride=c.get("input_dilation", 1),
                             a_transpose=int(c.get("trans_input_3120", 0)),
                             b_transpose=int(c.get("trans_weight_0132", 0))),
                    *loop_words(c, hw, bufs), Fence()]
    return Program(hw, instructions, buffers)


def _shape(c: dict, name: str) -> tuple[int, ...]:
    """A buffer's shape as stored: its layout flag's axes of the logical shape."""
    out_h, out_w = out_dims(c)
    logical = {"input": (c["batch"], c["in_h"], c["in_w"], c["in_c"]),
               "weight": (c["in_c"], c["k"], c["k"]) if c.get("dw") else (c["k"], c["k"], c["in_c"], c["out_c"]),
               "output": (c["batch"], out_h, out_w, c["out_c"])}[name]
    axes = _stored_axes(c, name)
    return logical if axes is None else tuple(logical[a] for a in axes)


def _logical(c: dict, name: str, stored: np.ndarray) -> np.ndarray:
    axes = _stored_axes(c, name)
    return stored if axes is None else stored.transpose(np.argsort(axes))


def random_inputs(c: dict, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {"input": rng.integers(-128, 128, _shape(c, "input"), dtype=np.int8),
           "weight": rng.integers(-128, 128, _shape(c, "weight"), dtype=np.int8)}
    if c.get("bias", True):
        out["bias"] = rng.integers(-3000, 3000, (c["out_c"],), dtype=np.int32)
    return out


def reference(c: dict, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """The conv in int64 (exact), then the store path: scale, rne, int8, ReLU; in the stored layouts."""
    out_h, out_w = out_dims(c)
    kd, s, p, k, di = c.get("dilation", 1), c["stride"], c["pad"], c["k"], c.get("input_dilation", 1)
    x = _logical(c, "input", inputs["input"]).astype(np.int64)
    dilated = np.zeros((x.shape[0], _dilated(c["in_h"], c), _dilated(c["in_w"], c), x.shape[3]), np.int64)
    dilated[:, ::di, ::di] = x   # input dilation: zeros between the pixels
    x = np.pad(dilated, ((0, 0), (p, p), (p, p), (0, 0)))
    w = _logical(c, "weight", inputs["weight"]).astype(np.int64)
    if c.get("wrot180"):
        w = w[::-1, ::-1] if not c.get("dw") else w[:, ::-1, ::-1]
    acc = np.zeros((c["batch"], out_h, out_w, c["out_c"]), np.int64)
    for kh in range(k):
        for kw in range(k):
            patch = x[:, kh * kd: kh * kd + s * (out_h - 1) + 1: s, kw * kd: kw * kd + s * (out_w - 1) + 1: s, :]
            acc += patch * w[:, kh, kw] if c.get("dw") else patch @ w[kh, kw]
    if c.get("bias", True):
        acc += inputs["bias"].astype(np.int64)
    out = acc_to_int8(acc.astype(np.int32), c.get("scale", 1.0), bool(c.get("relu", False)))
    axes = _stored_axes(c, "output")
    return out if axes is None else out.transpose(axes)
