/* The co-simulation runtime's C interface (see the README, "C programs"): RoCC words go to the
 * simulated accelerator in the order they are issued; a fence waits until it has done them all.
 * `systolic cc` links a program against the runtime and runs it. */
#ifndef SYSTOLIC_COSIM_H
#define SYSTOLIC_COSIM_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One RoCC instruction; the value of its rd (Gemmini's COUNTER_OP reads a counter), else 0. */
uint64_t systolic_rocc(uint64_t funct, uint64_t rs1, uint64_t rs2);
/* Wait until the accelerator has done every instruction issued so far (RISC-V `fence`). */
void systolic_fence(void);
/* The accelerator's cycle count (RISC-V `rdcycle`): the CPU is modelled as issuing at once. */
uint64_t systolic_rdcycle(void);

#ifdef __cplusplus
}
#endif
#endif
