/* One word the accelerator cannot run, after a config_ld and an mvin of a buffer that round-trips:
 * -DFUNCT=50 (a funct the ISA lacks) or -DROW=0x3ffff (an mvin to a scratchpad row far past the
 * end). Both engines must refuse it before it runs, with the same error. */
#include "accel.h"

int main(void) {
  static int8_t in[DIM * DIM], out[DIM * DIM];
  for (int i = 0; i < DIM * DIM; ++i) in[i] = (int8_t)(i + 1);
  config_ld(DIM, 0);
  config_st(DIM, 1.0f, 0);
#ifdef FUNCT
  ROCC(FUNCT, 0, 0);
#endif
#ifdef ROW
  mvin(in, ROW, DIM, DIM);
  mvout(out, ROW, DIM, DIM);
#endif
  fence();
  printf("bad_word: ran, out[1] = %d\n", out[1]);
  return 0;
}
