/* An mvin from an address no mapping of the process holds: the runtime must stop the program with
 * an error that names the address, not crash. */
#include "accel.h"

int main(void) {
  config_ld(DIM, 0);
  mvin((const void*)(uintptr_t)0xdead0000ull, 0, DIM, DIM);
  fence();
  printf("unmapped: the mvin was not refused\n");
  return 0;
}
