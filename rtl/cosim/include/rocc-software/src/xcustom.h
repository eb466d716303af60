/* The RoCC instruction macros of rocc-software's xcustom.h, as Gemmini's gemmini.h uses them,
 * mapped to the co-simulation runtime: each issues (funct, rs1, rs2) to the simulated
 * accelerator. `x` (which custom opcode) is accepted and ignored: there is one accelerator.
 * Written for this project from the macros' documented interface. */
#ifndef SYSTOLIC_XCUSTOM_H
#define SYSTOLIC_XCUSTOM_H
#include "systolic_cosim.h"

#define CUSTOM_0 0
#define CUSTOM_1 1
#define CUSTOM_2 2
#define CUSTOM_3 3
#define XCUSTOM_ACC 3

/* rd = the instruction's response (a counter read), from registers rs1 and rs2 */
#define ROCC_INSTRUCTION_R_R_R(x, rd, rs1, rs2, funct) \
  { (rd) = systolic_rocc((uint64_t)(funct), (uint64_t)(rs1), (uint64_t)(rs2)); }
/* no response wanted */
#define ROCC_INSTRUCTION_0_R_R(x, rs1, rs2, funct) \
  { (void)systolic_rocc((uint64_t)(funct), (uint64_t)(rs1), (uint64_t)(rs2)); }
#define ROCC_INSTRUCTION(x, rd, rs1, rs2, funct) ROCC_INSTRUCTION_R_R_R(x, rd, rs1, rs2, funct)

#endif
