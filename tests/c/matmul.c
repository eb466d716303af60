/* One DIM x DIM tile of C = A @ B + D by hand: A and B into the scratchpad, the int32 bias D into
 * the accumulator, one preload and compute (weight-stationary) accumulating onto it, and the int32
 * result out; checked against the same product on the CPU. */
#include "accel.h"

int main(void) {
  static int8_t a[DIM][DIM], b[DIM][DIM];
  static int32_t d[DIM][DIM], c[DIM][DIM];
  for (int i = 0; i < DIM; ++i)
    for (int j = 0; j < DIM; ++j) {
      a[i][j] = (int8_t)((i * 7 + j * 3) % 19 - 9);
      b[i][j] = (int8_t)((i * 5 + j * 11) % 23 - 11);
      d[i][j] = (i + 1) * 1000 - j;
    }
  config_ex_ws();
  config_ld(DIM, 0);
  mvin(a, 0, DIM, DIM);
  mvin(b, DIM, DIM, DIM);
  config_ld(DIM * 4, 1);
  ROCC(1, (uint64_t)(uintptr_t)d, operand(ACC, DIM, DIM));   /* mvin2: load state 1 */
  preload(DIM, ACC | ACCUMULATE, DIM, DIM);
  compute_preloaded(0, GARBAGE, DIM, DIM);
  config_st(DIM * 4, 1.0f, 0);
  mvout(c, ACC | FULL, DIM, DIM);
  fence();
  for (int i = 0; i < DIM; ++i)
    for (int j = 0; j < DIM; ++j) {
      int32_t want = d[i][j];
      for (int k = 0; k < DIM; ++k) want += a[i][k] * b[k][j];
      if (c[i][j] != want) {
        printf("matmul: MISMATCH at (%d, %d): %d, expected %d\n", i, j, c[i][j], want);
        return 1;
      }
    }
  printf("matmul: ok\n");
  return 0;
}
