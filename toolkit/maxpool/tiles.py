"""Tiles of a max pool done by the store unit (config_st's pooling fields, as gemmini.h's tiled_conv sets them).

A tile is ``porows`` x ``pocols`` pooled pixels; the store unit reads the image pixels its windows
cover (one local row a pixel, row-major). The pooling fields are two bits wide (Gemmini's): square
windows of at most 3, strides of at most 3.

Gemmini's store unit pools a padded position (config_st's upad/lpad, or past the image's end) as the
byte 0, where ONNX MaxPool's padding never wins: the two agree when the padding is 0 or no pooled
byte can be below 0 (:func:`pads_as_onnx`). Otherwise the tiles take the padding into their image,
each padded pixel a copy of the nearest edge pixel (``edge=True``): a window that covers a padded
position covers that edge pixel too (padding < kernel), so the copy changes no max, and the store
unit sees no padding at all.
"""
from __future__ import annotations

from typing import NamedTuple

POOL_FIELD_MAX = 3     # pool_size, pool_stride, upad and lpad are 2-bit fields
IMAGE_MAX = 255        # orows, ocols, porows, pocols and pool_out_dim are 8-bit fields


def store_can_pool(kernel: tuple[int, int], stride: int, padding: int) -> bool:
    """Whether config_st's fields can express this pool."""
    return kernel[0] == kernel[1] and kernel[0] <= POOL_FIELD_MAX and stride <= POOL_FIELD_MAX \
        and padding < kernel[0]


def pads_as_onnx(padding: int, nonnegative: bool) -> bool:
    """Whether Gemmini's store-path pooling (a padded position pools as 0) is ONNX MaxPool's (padding never
    wins) for a pool of ``padding`` over bytes that are never below 0 when ``nonnegative``."""
    return padding == 0 or nonnegative


def image_extent(pooled: int, kernel: int, stride: int) -> int:
    """Image pixels (padding included) that ``pooled`` windows span along one axis."""
    return (pooled - 1) * stride + kernel


class PoolTile(NamedTuple):
    """One tile: its first pooled row and column, its size, and the image pixels it reads."""

    porow: int
    pocol: int
    porows: int
    pocols: int
    row: int        # first image row it reads (below 0 with edge copies)
    col: int
    orows: int      # image rows and columns it reads (the store unit's orows / ocols)
    ocols: int
    upad: int       # padding rows above and columns left of them
    lpad: int

    def config_st(self, kernel: int, stride: int, pool_out_dim: int) -> str:
        """The pooling fields of this tile's config_st, as assembly."""
        return (f"pool_stride={stride} pool_size={kernel} pool_out_dim={pool_out_dim} porows={self.porows} "
                f"pocols={self.pocols} orows={self.orows} ocols={self.ocols} upad={self.upad} lpad={self.lpad}")


def _axis(first: int, count: int, extent: int, kernel: int, stride: int, padding: int,
          edge: bool) -> tuple[int, int, int]:
    """(first image pixel, pixels, padding before them) of ``count`` pooled pixels from ``first``; with
    ``edge`` the padding is in the pixels (edge copies), so none is left before them."""
    lo = first * stride - padding
    if edge:
        return lo, image_extent(count, kernel, stride), 0
    hi = min(extent, lo + image_extent(count, kernel, stride))
    return max(lo, 0), hi - max(lo, 0), max(-lo, 0)


def pool_tiles(size: tuple[int, int], out: tuple[int, int], tile: tuple[int, int], kernel: int, stride: int,
               padding: int, edge: bool = False) -> list[PoolTile]:
    """The tiles of ``tile`` = (porows, pocols) pooled pixels covering an ``out`` pooled image of an ``size``
    image, row-major; with ``edge``, images of edge copies where the windows cover padding."""
    (h, w), (oh, ow), (tr, tc) = size, out, tile
    tiles = []
    for porow in range(0, oh, tr):
        rows = min(tr, oh - porow)
        row, orows, upad = _axis(porow, rows, h, kernel, stride, padding, edge)
        for pocol in range(0, ow, tc):
            cols = min(tc, ow - pocol)
            col, ocols, lpad = _axis(pocol, cols, w, kernel, stride, padding, edge)
            tiles.append(PoolTile(porow, pocol, rows, cols, row, col, orows, ocols, upad, lpad))
    return tiles
