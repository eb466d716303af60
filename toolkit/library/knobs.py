"""The tuner's knob domains of Gemmini's loops (the "loops" family of tuner.space.Space)."""
from __future__ import annotations

from isa import HardwareConfig

from ..conv.ops import Conv2d
from ..gemm.op import Matmul
from ..conv.ops import DepthwiseConv2d
from ..gemm.schedule import matmul_blocks
from ..resadd import ResAdd
from ..knobs import Domains, tile_values
from .conv_tiles import ARGS, conv_maxes, dw_maxes
from .schedule import CONV_ORDERS, MATMUL_ORDERS, pointwise_matmul
from .words import ceil_div

# the knobs LibraryMatmul.memory_plan reads
LIBRARY_MATMUL_FIT = frozenset({"tile_i", "tile_j", "tile_k"})
# the knobs LibraryConv.memory_plan reads: every tile argument (the walk only orders the tiles)
LIBRARY_CONV_FIT = frozenset(ARGS)
# tiled_conv_dw's and tiled_resadd's tiles: each is held to gemmini.h's assertions (check_library) as a whole
LIBRARY_DEPTHWISE_FIT = frozenset({"batches", "porows", "pocols"})
LIBRARY_RESADD_FIT = frozenset({"tile_i", "tile_j"})


def library_matmul_domains(op: Matmul, hw: HardwareConfig, policy: str) -> Domains:
    """tiled_matmul's tiles (in blocks, as the flat family's) and the host's walk over them."""
    blocks = matmul_blocks(op.M, op.N, op.K, hw)
    return {"tile_i": tile_values(blocks["i"], policy), "tile_j": tile_values(blocks["j"], policy),
            "tile_k": tile_values(blocks["k"], policy), "order": list(MATMUL_ORDERS)}


def pointwise_domains(op: Conv2d, hw: HardwareConfig, policy: str) -> Domains:
    """tiled_matmul_nn_auto's tiles of a pointwise conv: :func:`library_matmul_domains` of its matmul view."""
    return library_matmul_domains(pointwise_matmul(op), hw, policy)


def channel_values(channels: int, dim: int, policy: str) -> list[int]:
    """Channel tiles in whole ``dim``-wide blocks (a block is a scratchpad row; a part of one wastes the rest of
    it), the last cut at the channel count: fewer channels than a block are one tile."""
    return sorted({min(blocks * dim, channels) for blocks in tile_values(ceil_div(channels, dim), policy)})


def library_conv_domains(op: Conv2d, hw: HardwareConfig, policy: str) -> Domains:
    """tiled_conv's tile arguments (pixels over each dimension's tile counts, channels in blocks) and the host's
    walk over the tiles. ScheduleError for a conv gemmini.h cannot do (conv_maxes)."""
    maxes = conv_maxes(op)
    domains: Domains = {n: tile_values(maxes[n], policy) for n in ARGS if n not in ("pochs", "kchs")}
    domains.update(pochs=channel_values(op.out_c, hw.dim, policy), kchs=channel_values(op.in_c, hw.dim, policy),
                   order=list(CONV_ORDERS), resident=[False, True])
    return domains


def library_depthwise_domains(op: DepthwiseConv2d, hw: HardwareConfig, policy: str) -> Domains:
    """tiled_conv_dw's tiles of output pixels (its channel and kernel tiles are one each: see depthwise.py).
    Its columns are whole rows of the array's blocks (``dim`` or more, or all of them): every loop word is one
    channel and tap of a tile, so a tile of a few pixels multiplies the words (28x28 pixels one at a time are
    1.6 M) for a fraction of a block of work each."""
    maxes = dw_maxes(op)
    cols = [c for c in tile_values(maxes["pocols"], policy) if c >= min(hw.dim, maxes["pocols"])]
    return {"batches": tile_values(maxes["batches"], policy), "porows": tile_values(maxes["porows"], policy),
            "pocols": cols}


def library_resadd_domains(op: ResAdd, hw: HardwareConfig, policy: str) -> Domains:
    """tiled_resadd's tile_I (pixels: in ``dim``-row blocks, the last cut at the pixel count, and the halvings
    tiled_resadd_auto tries, down to a block: fewer rows than ``dim`` pad every word's block) and tile_J
    (channels, in ``dim``-wide blocks)."""
    pixels = op.batch * op.h * op.w
    halvings = {pixels >> p for p in range(pixels.bit_length()) if pixels >> p >= min(hw.dim, pixels)}
    return {"tile_i": sorted(halvings.union(channel_values(pixels, hw.dim, policy))),
            "tile_j": channel_values(op.channels, hw.dim, policy)}
