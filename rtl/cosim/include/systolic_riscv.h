/* Force-included (gcc -include) into every C file `systolic cc` compiles: the RISC-V `fence`
 * and `rdcycle` that gemmini.h writes as inline assembly, made to work on x86-64 unchanged.
 * They are assembler macros: gcc copies an asm statement's text into its assembly output, and
 * the assembler expands `fence` and `rdcycle REG` (no x86 instructions have those names) into
 * calls of the runtime's trampolines, which keep every register and the flags. The calls skip
 * the 128-byte red zone below the stack pointer, where the compiler may keep values. */
#ifndef SYSTOLIC_RISCV_H
#define SYSTOLIC_RISCV_H
#define SYSTOLIC_CC 1   /* built by systolic cc (exported C waits for the accelerator by a clock read) */
__asm__(".macro fence\n"
        "  lea -128(%rsp), %rsp\n"
        "  call systolic_fence_trampoline\n"
        "  lea 128(%rsp), %rsp\n"
        ".endm\n"
        ".macro rdcycle reg\n"
        "  lea -136(%rsp), %rsp\n"          /* a slot for the result, below the red zone */
        "  call systolic_rdcycle_trampoline\n"
        "  pop \\reg\n"
        "  lea 128(%rsp), %rsp\n"
        ".endm\n");
#endif
