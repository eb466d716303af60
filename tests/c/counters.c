/* Gemmini's COUNTER_OP (funct 126): set slot 0 to count the load unit's active cycles
 * (LOAD_ACTIVE_CYCLE, 9) and slot 1 the DMA bytes read (an external counter, 44 + 4); they
 * start at 0, count the mvins, hold still under a snapshot, and read 0 after a reset. Prints
 * the values; the test compares them with the RTL's counters. */
#include "accel.h"

static uint64_t counter_op(uint64_t rs1) {
  uint64_t value;
  ROCC_INSTRUCTION(XCUSTOM_ACC, value, rs1, 0, 126);
  return value;
}
#define SET(slot, code, external) ((slot) << 4 | 0x8 | (uint64_t)(code) << 12 | (uint64_t)(external) << 31)
#define READ(slot) ((uint64_t)(slot) << 4)

int main(void) {
  static int8_t in[4][DIM][DIM];
  if (counter_op(SET(0, 9, 0)) != 0 || counter_op(SET(1, 4, 1)) != 0) {
    printf("counters: not 0 when set\n");
    return 1;
  }
  config_ld(DIM, 0);
  for (int n = 0; n < 4; ++n) mvin(in[n], n * DIM, DIM, DIM);
  fence();
  uint64_t active = counter_op(READ(0)), bytes = counter_op(READ(1) | 0x4);   /* read 1 and snapshot */
  mvin(in[0], 0, DIM, DIM);
  fence();
  if (counter_op(READ(1)) != bytes) {
    printf("counters: the snapshot moved\n");
    return 1;
  }
  counter_op(0x2);   /* drop the snapshot */
  uint64_t more = counter_op(READ(1));
  counter_op(0x1);   /* reset */
  printf("load_active %llu dma_bytes_read %llu then %llu after reset %llu\n", (unsigned long long)active,
         (unsigned long long)bytes, (unsigned long long)more, (unsigned long long)counter_op(READ(1)));
  return 0;
}
