"""Convolutions: conv2d and depthwise conv2d ops (ops), schedules (schedule), the default heuristic
(heuristic), the tile walk (tiles), what it sees of the input (geometry), the padding copy of
packed taps (packed) and the lowering (lowering).

Both lower as a *direct* convolution, weight-stationary, with no im2col copy in
DRAM. An output tile is a block of (batch, output rows, output columns, channel
blocks) pixels; each kernel tap (kh, kw) is a GEMM of the tile's output pixels
(rows of A) against that tap's C x K weights. The input tile sits in the
scratchpad one pixel per row (``dim`` channels wide, one plane per channel
block), laid out so that every tap reads its pixels as consecutive rows:

* Along each spatial axis the input indices a tile needs, o * stride + k - padding,
  are stored by *phase* (their residue modulo the stride). Within a phase,
  consecutive output pixels read consecutive scratchpad rows, so computes use
  ``a_stride=1``, and one strided mvin (``dram_stride = stride * C`` bytes)
  gathers a run of every stride-th input pixel. For stride 1 this is the
  plain halo'd tile; for a 1x1 stride-2 conv it loads only the pixels used.
* Padding is never loaded nor read: each tap computes only the output pixels
  whose input is inside the image (fewer ``a_rows``), and pixels the first tap
  misses are zeroed in the accumulator with a garbage compute (``A = 0``) when
  there is no bias to initialise them. So no zeros are needed in the scratchpad
  and no DRAM outside the input buffer is read.
* Pixel runs merge across rows and images whenever both the scratchpad rows and
  the DRAM pixels are consecutive (full-width tiles of 1x1 convs), so small
  feature maps still fill the array's ``dim`` rows.

Packed taps (``ConvSchedule.pack_taps``; see geometry): with few input channels a tap
fills C of the array's ``dim`` rows (ResNet's conv1: 3 of 16). Packed, the tile walk
sees kernel (KH, 1) over virtual pixels of KW * C channels, each the KW * C consecutive
bytes of a zero-padded input row that the taps of one kernel row read, so conv1 uses
21 of 32 rows. The padded input is a scratch copy the program makes first, fenced.

Depthwise conv (channel multiplier 1) reuses the same input tiles and loops; its
per-tap weights become diagonal ``dim x dim`` blocks built in the scratchpad
(zero the block with a garbage compute, then per row i an mvin of i + 1 weights
and a garbage compute zeroing the first i columns: column-masked writes make the
diagonal). The mesh then does 1/dim useful work, but everything stays on the
ISA and bit-exact.
"""
