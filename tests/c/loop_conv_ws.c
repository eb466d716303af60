/* A 3x3 conv (stride 1, padding 1) of a 4x4 image of DIM channels into DIM channels, with a
 * channel bias and int8 output, through one LOOP_CONV_WS (Gemmini's CISC conv loop): its six
 * config words and the loop, with the field layouts of the shared design notes; NHWC input,
 * HWIO weights; checked against the conv on the CPU, clipped to int8. -DWROT180=1 sets the loop's
 * wrot180 bit: the loop reads the kernel rotated by 180 degrees, and the reference does too. */
#include "accel.h"

#ifndef WROT180
#define WROT180 0
#endif
#define H 4
#define K 3

static int8_t clip8(int32_t x) { return (int8_t)(x > 127 ? 127 : x < -128 ? -128 : x); }

int main(void) {
  static int8_t in[H][H][DIM], w[K][K][DIM][DIM], out[H][H][DIM];
  static int32_t bias[DIM];
  for (int c = 0; c < DIM; ++c) bias[c] = 17 * c - 30;
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < H; ++x)
      for (int c = 0; c < DIM; ++c) in[y][x][c] = (int8_t)((y * 5 + x * 3 + c * 7) % 11 - 5);
  for (int ky = 0; ky < K; ++ky)
    for (int kx = 0; kx < K; ++kx)
      for (int c = 0; c < DIM; ++c)
        for (int k = 0; k < DIM; ++k) w[ky][kx][c][k] = (int8_t)((ky * 2 + kx * 3 + c + k * 5) % 7 - 3);

  config_st(DIM, 1.0f, 0);
  config_ex_ws();
  const uint64_t one = 1, h = H, k = K, d = DIM;
  ROCC(16, one | h << 16 | d << 32 | d << 48, h | h << 16 | h << 32 | one << 48 | one << 56);
  ROCC(17, 0 | one << 8 | one << 16 | h << 32 | k << 48, d | h << 16 | h << 32 | one << 48);
  ROCC(18, one | d << 16 | k << 32 | k << 48, h | 0 << 16 | one << 24 | one << 32 | one << 48);
  ROCC(19, one | h << 48, h | d << 16 | d << 32 | d << 48);
  ROCC(20, (uint64_t)(uintptr_t)w, (uint64_t)(uintptr_t)out);
  ROCC(21, (uint64_t)(uintptr_t)bias, (uint64_t)(uintptr_t)in);
  /* wrot180 as defined, max_pixels_per_row 1, spad ids 1; no pooling */
  ROCC(15, (uint64_t)WROT180 << 1 | one << 8 | one << 16 | one << 18, 1);
  fence();

  for (int y = 0; y < H; ++y)
    for (int x = 0; x < H; ++x)
      for (int o = 0; o < DIM; ++o) {
        int32_t acc = bias[o];
        for (int ky = 0; ky < K; ++ky)
          for (int kx = 0; kx < K; ++kx) {
            const int iy = y + ky - 1, ix = x + kx - 1;
            if (iy < 0 || iy >= H || ix < 0 || ix >= H) continue;
            const int wy = WROT180 ? K - 1 - ky : ky, wx = WROT180 ? K - 1 - kx : kx;
            for (int c = 0; c < DIM; ++c) acc += in[iy][ix][c] * w[wy][wx][c][o];
          }
        if (out[y][x][o] != clip8(acc)) {
          printf("loop_conv_ws: MISMATCH at (%d, %d, %d): %d, expected %d\n", y, x, o, out[y][x][o], clip8(acc));
          return 1;
        }
      }
  printf("loop_conv_ws: ok\n");
  return 0;
}
