/* The DMA reads from and writes to arrays on the program's stack (automatic variables). */
#include "accel.h"

static int round_trip(int seed) {
  int8_t in[DIM][DIM], out[DIM][DIM];   /* on the stack */
  for (int i = 0; i < DIM; ++i)
    for (int j = 0; j < DIM; ++j) {
      in[i][j] = (int8_t)(seed + i * DIM + j);
      out[i][j] = 0;
    }
  config_ld(DIM, 0);
  config_st(DIM, 1.0f, 0);
  mvin(in, 0, DIM, DIM);
  mvout(out, 0, DIM, DIM);
  fence();
  return memcmp(in, out, sizeof in) != 0;
}

int main(void) {
  if (round_trip(3) || round_trip(-40)) {
    printf("stack_dma: MISMATCH\n");
    return 1;
  }
  printf("stack_dma: ok\n");
  return 0;
}
