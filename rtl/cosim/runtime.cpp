// The co-simulation runtime (include/systolic_cosim.h): the C API a program calls, its
// engine, Gemmini's counters, and the report at exit (cycles and counters on stderr). A
// failure of the simulation (a refused DMA address, a watchdog, a bad word) is one line on
// stderr, "systolic: error: ...", and exit status EXIT_SIMULATION. Every word passes the
// toolkit's checker first (word_check.h), whichever the engine.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "engine.h"
#include "failure.h"
#include "gemmini_counters.h"
#include "systolic_cosim.h"
#include "systolic_isa.h"
#include "word_check.h"

namespace cosim {
namespace {

constexpr int EXIT_SIMULATION = 70;

struct Runtime {
    ProcessMemory memory;
    WordCheck words;   // every word, checked before the engine gets it: one rule for both engines
    std::unique_ptr<Engine> engine;
    GemminiCounters counters;
};

Runtime* the_runtime = nullptr;   // started on first use, never freed: atexit runs after main

[[noreturn]] void die(const harness::Failure& f) {
    std::fflush(stdout);
    std::fprintf(stderr, "systolic: error: %s\n", f.msg.c_str());
    std::_Exit(EXIT_SIMULATION);
}

void report() {
    Runtime* rt = the_runtime;
    try {
        rt->engine->finish();
    } catch (const harness::Failure& f) {
        die(f);
    }
    std::fflush(stdout);
    if (!rt->engine->timed()) {
        std::fprintf(stderr, "systolic: %s engine (no timing)\n", rt->engine->name());
        return;
    }
    std::fprintf(stderr, "systolic: cycles %" PRIu64 "\nsystolic: clock loop %.6f s\nsystolic: counters",
                 rt->engine->cycles(), rt->engine->clock_seconds());
    for (int i = 0; i < N_COUNTERS; ++i)
        std::fprintf(stderr, " %s=%" PRIu64, COUNTER_NAMES[i], rt->engine->counter(i));
    for (int i = 0; i < N_SOC_COUNTERS; ++i)
        std::fprintf(stderr, " %s=%" PRIu64, SOC_COUNTER_NAMES[i], rt->engine->soc_counter(i));
    std::fprintf(stderr, "\n");
}

// The runtime, started on first use; its report runs at exit.
Runtime& runtime() {
    if (!the_runtime) {
        try {
            the_runtime = new Runtime();
            the_runtime->engine = make_engine(the_runtime->memory, the_runtime->words);
        } catch (const harness::Failure& f) {
            die(f);
        }
        std::atexit(report);
    }
    return *the_runtime;
}

// An engine without timing answers a clock or counter read with 0; a program that divides by cycles
// or checks a counter then fails for that alone, so the first read of each kind says so on stderr.
void note_untimed(const Runtime& rt, bool& said, const char* what) {
    if (rt.engine->timed() || said) return;
    said = true;
    std::fflush(stdout);
    std::fprintf(stderr, "systolic: note: the program reads %s; on the %s engine, which has no timing, every "
                 "such read gives 0, so a result that depends on it needs --backend verilator\n", what,
                 rt.engine->name());
}

template <class F> auto guarded(F f) -> decltype(f(runtime())) {
    Runtime& rt = runtime();
    try {
        return f(rt);
    } catch (const harness::Failure& f) {
        die(f);
    }
}

}  // namespace
}  // namespace cosim

using cosim::Runtime;

extern "C" uint64_t systolic_rocc(uint64_t funct, uint64_t rs1, uint64_t rs2) {
    return cosim::guarded([&](Runtime& rt) -> uint64_t {
        if (funct != FUNCT_COUNTER_OP) {
            rt.words.check({funct, rs1, rs2});
            rt.engine->issue({funct, rs1, rs2});
            return 0;
        }
        rt.engine->dispatch_all();   // as on Gemmini, the counter op follows the words before it
        static bool said = false;
        cosim::note_untimed(rt, said, "Gemmini's performance counters (COUNTER_OP)");
        return rt.counters.op(*rt.engine, rs1);
    });
}

extern "C" void systolic_fence(void) {
    cosim::guarded([](Runtime& rt) { rt.engine->fence(); });
}

// The CPU issues at once, so a clock read is where its time passes: the accelerator finishes
// what it has first (Gemmini's tests read results after a clock read without a fence, as the
// accelerator is done by then on a CPU that takes its time).
extern "C" uint64_t systolic_rdcycle(void) {
    return cosim::guarded([](Runtime& rt) {
        rt.engine->finish();
        static bool said = false;
        cosim::note_untimed(rt, said, "the cycle counter (rdcycle)");
        return rt.engine->cycles();
    });
}

// For the functional engine's Python side: one DMA row copied between `buf` and the program's
// memory (into it when `write`) at the moment of the call; NULL when done, else why not.
extern "C" const char* systolic_cosim_copy(uint64_t addr, uint64_t len, void* buf, int write) {
    static std::string why;
    why = cosim::runtime().memory.copy(addr, buf, len, write != 0);
    return why.empty() ? nullptr : why.c_str();
}

// The trampolines of include/systolic_riscv.h's `fence` and `rdcycle` macros: they keep every
// register the C code may hold (the caller-saved ones, the flags, the x87/SSE state), align the
// stack for the call, and rdcycle leaves its result in the slot above its return address.
__asm__(R"(
    .text
    .macro systolic_save
    pushfq
    push %rax
    push %rcx
    push %rdx
    push %rsi
    push %rdi
    push %r8
    push %r9
    push %r10
    push %r11
    push %rbp
    mov %rsp, %rbp
    sub $512, %rsp
    and $-64, %rsp
    fxsave64 (%rsp)
    .endm
    .macro systolic_restore
    fxrstor64 (%rsp)
    mov %rbp, %rsp
    pop %rbp
    pop %r11
    pop %r10
    pop %r9
    pop %r8
    pop %rdi
    pop %rsi
    pop %rdx
    pop %rcx
    pop %rax
    popfq
    .endm
    .globl systolic_fence_trampoline
    .type systolic_fence_trampoline, @function
systolic_fence_trampoline:
    systolic_save
    call systolic_fence@PLT
    systolic_restore
    ret
    .globl systolic_rdcycle_trampoline
    .type systolic_rdcycle_trampoline, @function
systolic_rdcycle_trampoline:
    systolic_save
    call systolic_rdcycle@PLT
    mov %rax, 96(%rbp)
    systolic_restore
    ret
)");
