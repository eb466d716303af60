/* Issues the words of a file as they are, for tests/test_cosim_words.py: argv[1] holds u64 n, then n
 * words (funct, rs1, rs2, relocate: bit 0 rs1, bit 1 rs2 hold DRAM offsets, relocated by the
 * image's address), then u64 size and the DRAM image; after a fence, the image and SLACK bytes past
 * it (zeros at first) go to argv[2]. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "systolic_cosim.h"

#define SLACK 4096

static uint64_t get(FILE* f) {
  uint64_t v;
  if (fread(&v, sizeof v, 1, f) != 1) { fprintf(stderr, "words: short file\n"); exit(2); }
  return v;
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  FILE* f = fopen(argv[1], "rb");
  if (!f) return 2;
  uint64_t n = get(f);
  uint64_t(*w)[4] = malloc((n ? n : 1) * sizeof *w);
  for (uint64_t i = 0; i < n; ++i)
    for (int k = 0; k < 4; ++k) w[i][k] = get(f);
  uint64_t size = get(f);
  uint64_t total = (size + SLACK + 4095) / 4096 * 4096;
  uint8_t* dram = aligned_alloc(4096, total);
  memset(dram, 0, total);
  if (fread(dram, 1, size, f) != size) return 2;
  fclose(f);
  printf("base %llu\n", (unsigned long long)(uintptr_t)dram);
  fflush(stdout);
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t rs1 = w[i][1] + ((w[i][3] & 1) ? (uint64_t)(uintptr_t)dram : 0);
    uint64_t rs2 = w[i][2] + ((w[i][3] & 2) ? (uint64_t)(uintptr_t)dram : 0);
    systolic_rocc(w[i][0], rs1, rs2);
  }
  systolic_fence();
  FILE* out = fopen(argv[2], "wb");
  if (!out || fwrite(dram, 1, size + SLACK, out) != size + SLACK) return 2;
  fclose(out);
  return 0;
}
