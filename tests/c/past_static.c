/* A DMA write 1 MiB past the end of a static array, as gemmini-rocc-tests' transformer.c writes its FFN output
 * past out_buf_acc: on a bare-metal Gemmini it lands in whatever memory follows; under systolic cc with
 * --data-slack it lands in the slack linked after the program's static data. */
#include "accel.h"

extern char systolic_cosim_data_slack[];
static int8_t data[DIM][DIM];

int main(void) {
  for (int i = 0; i < DIM; i++)
    for (int j = 0; j < DIM; j++) data[i][j] = (int8_t)(i * DIM + j + 1);
  int8_t* past = (int8_t*)data + (1 << 20);
  config_ld(DIM, 0);
  config_st(DIM, 1.0f, 0);
  mvin(data, 0, DIM, DIM);
  mvout(past, 0, DIM, DIM);
  fence();
  if (past < (int8_t*)systolic_cosim_data_slack || past + DIM * DIM > (int8_t*)systolic_cosim_data_slack + (4 << 20)) {
    printf("past_static: %p is not in the slack\n", (void*)past);
    return 1;
  }
  printf("past_static: %s\n", memcmp(past, data, sizeof data) ? "differs" : "ok");
  return 0;
}
