/* mvin then mvout of DIM x DIM int8 rows through the scratchpad, and of int32 rows through the
 * accumulator (full rows out): each comes back unchanged. No fence: the outputs are compared after a
 * clock read, as Gemmini's own tests do (the runtime lets the accelerator finish there). */
#include "accel.h"

int main(void) {
  static int8_t in[DIM][DIM], out[DIM][DIM];
  static int32_t acc_in[DIM][DIM], acc_out[DIM][DIM];
  for (int i = 0; i < DIM; ++i)
    for (int j = 0; j < DIM; ++j) {
      in[i][j] = (int8_t)(i * DIM + j - 7);
      acc_in[i][j] = (i - j) * 100003;
    }
  uint64_t start = rdcycle();
  config_ld(DIM, 0);
  config_st(DIM, 1.0f, 0);
  mvin(in, 0, DIM, DIM);
  mvout(out, 0, DIM, DIM);
  config_ld(DIM * 4, 0);
  config_st(DIM * 4, 1.0f, 0);
  mvin(acc_in, ACC, DIM, DIM);
  mvout(acc_out, ACC | FULL, DIM, DIM);
  uint64_t end = rdcycle();
  if (memcmp(in, out, sizeof in) || memcmp(acc_in, acc_out, sizeof acc_in)) {
    printf("mvin_mvout: MISMATCH\n");
    return 1;
  }
  printf("mvin_mvout: ok (%llu cycles to the clock read)\n", (unsigned long long)(end - start));
  return 0;
}
