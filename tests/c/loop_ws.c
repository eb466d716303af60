/* A (2 DIM)^3 matmul with a row bias and int8 output through one LOOP_WS (Gemmini's CISC matmul
 * loop): the config words, the five loop config words and the loop, with the field layouts of
 * the shared design notes (bounds in DIM blocks, DRAM strides in elements); checked against the
 * product on the CPU, clipped to int8. -DACT=5 asks the loop for an activation Gemmini has no
 * number for: the run must stop with the runtime's error. */
#include "accel.h"

#ifndef ACT
#define ACT 0
#endif
#define N (2 * DIM)

static int8_t clip8(int32_t x) { return (int8_t)(x > 127 ? 127 : x < -128 ? -128 : x); }

int main(void) {
  static int8_t a[N][N], b[N][N], c[N][N];
  static int32_t bias[N];
  for (int i = 0; i < N; ++i) {
    bias[i] = i * 3 - 20;
    for (int j = 0; j < N; ++j) {
      a[i][j] = (int8_t)((i * 7 + j * 5) % 13 - 6);
      b[i][j] = (int8_t)((i * 3 + j * 11) % 9 - 4);
    }
  }
  config_ex_ws();
  config_st(N, 1.0f, 0);
  config_ld(N, 0);                   /* A rows */
  config_ld(N, 1);                   /* B rows */
  config_ld(0, 2);                   /* the bias row, repeated down the accumulator */
  const uint64_t blocks = N / DIM;
  ROCC(9, 0, (blocks << 32) | (blocks << 16) | blocks);                       /* bounds: I, J, K */
  ROCC(10, (uint64_t)(uintptr_t)a, (uint64_t)(uintptr_t)b);                 /* A, B */
  ROCC(11, (uint64_t)(uintptr_t)bias, (uint64_t)(uintptr_t)c);              /* D, C */
  ROCC(12, N, N);                                                             /* A, B strides */
  ROCC(13, 0, N);                                                             /* D, C strides */
  ROCC(8, (1u << 18) | (1u << 16) | (ACT << 8) | 1, 0);   /* a_spad_id 1, b_spad_id 1, act, ex_accumulate */
  fence();
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) {
      int32_t acc = bias[j];
      for (int k = 0; k < N; ++k) acc += a[i][k] * b[k][j];
      if (c[i][j] != clip8(acc)) {
        printf("loop_ws: MISMATCH at (%d, %d): %d, expected %d\n", i, j, c[i][j], clip8(acc));
        return 1;
      }
    }
  printf("loop_ws: ok\n");
  return 0;
}
