/* DMA to memory that was the program's when the runtime last looked and is not now (issue 41 #1):
 * -DFREED: an mvin from a large buffer (malloc maps it apart), free() (which unmaps it), the mvin
 * again; -DREADONLY: an mvout into a page, mprotect(PROT_READ), the mvout again. The runtime must
 * stop the program with an error naming the address (exit 70), never crash. */
#include <stdlib.h>
#include <sys/mman.h>

#include "accel.h"

int main(void) {
  config_ld(DIM, 0);
  config_st(DIM, 1.0f, 0);
#ifdef FREED
  int8_t* big = malloc(1 << 20);
  for (int i = 0; i < 1 << 20; ++i) big[i] = (int8_t)i;
  mvin(big, 0, DIM, DIM);
  fence();
  free(big);
  printf("stale_memory: at %p\n", (void*)big);
  fflush(stdout);
  mvin(big, 0, DIM, DIM);
#else
  static int8_t in[DIM * DIM];
  int8_t* page = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  mvin(in, 0, DIM, DIM);
  mvout(page, 0, DIM, DIM);
  fence();
  mprotect(page, 4096, PROT_READ);
  printf("stale_memory: at %p\n", (void*)page);
  fflush(stdout);
  mvout(page, 0, DIM, DIM);
#endif
  fence();
  printf("stale_memory: the DMA was not refused\n");
  return 0;
}
