/* The project's own helpers for its C test programs, written from Gemmini's documented encoding
 * (the shared design notes, "ISA"): each issues one RoCC word through xcustom.h's macro. DIM is
 * the array's size, given with -DDIM=N. */
#ifndef TEST_ACCEL_H
#define TEST_ACCEL_H
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rocc-software/src/xcustom.h"

#ifndef DIM
#error "compile with -DDIM=<the array's dim>"
#endif

#define ROCC(funct, rs1, rs2) ROCC_INSTRUCTION_0_R_R(XCUSTOM_ACC, (rs1), (rs2), (funct))
#define GARBAGE 0xFFFFFFFFu
#define ACC (1u << 31)
#define ACCUMULATE (1u << 30)
#define FULL (1u << 29)

static inline uint64_t operand(uint32_t local, uint64_t rows, uint64_t cols) {
  return (rows << 48) | (cols << 32) | local;
}
static inline uint32_t f32_bits(float x) { uint32_t b; memcpy(&b, &x, 4); return b; }

/* config_ld of load state `state`: DRAM row stride in bytes, load scale 1.0, block stride DIM */
static inline void config_ld(uint64_t stride, unsigned state) {
  ROCC(0, ((uint64_t)f32_bits(1.0f) << 32) | ((uint64_t)DIM << 16) | (1u << 8) | (state << 3) | 1, stride);
}
/* config_st: DRAM row stride in bytes, float32 scale of accumulator rows, ReLU or not */
static inline void config_st(uint64_t stride, float scale, int relu) {
  ROCC(0, ((uint64_t)relu << 2) | 2, ((uint64_t)f32_bits(scale) << 32) | (uint32_t)stride);
}
/* config_ex: weight-stationary, no activation, scale 1.0, A stride 1, C stride 1 */
static inline void config_ex_ws(void) {
  ROCC(0, ((uint64_t)f32_bits(1.0f) << 32) | (1u << 16) | (1u << 2), (uint64_t)1 << 48);
}
static inline void mvin(const void* dram, uint32_t local, unsigned rows, unsigned cols) {
  ROCC(2, (uint64_t)(uintptr_t)dram, operand(local, rows, cols));
}
static inline void mvout(void* dram, uint32_t local, unsigned rows, unsigned cols) {
  ROCC(3, (uint64_t)(uintptr_t)dram, operand(local, rows, cols));
}
static inline void preload(uint32_t b, uint32_t c, unsigned rows, unsigned cols) {
  ROCC(6, operand(b, rows, cols), operand(c, rows, cols));
}
static inline void compute_preloaded(uint32_t a, uint32_t d, unsigned rows, unsigned cols) {
  ROCC(4, operand(a, rows, cols), operand(d, rows, cols));
}
static inline void fence(void) { __asm__ volatile("fence"); }
static inline uint64_t rdcycle(void) {
  uint64_t c;
  __asm__ volatile("rdcycle %0" : "=r"(c));
  return c;
}
#endif
