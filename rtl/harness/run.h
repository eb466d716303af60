// One program from its file to its results file: the machine (machine.h) takes the program's
// instructions and DRAM image and runs until every instruction is done.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>

#include "args.h"
#include "dram.h"
#include "instr_log.h"
#include "machine.h"
#include "program.h"
#include "results.h"

namespace harness {

// Each run builds its own: a fresh model and DRAM, so nothing of one program reaches the next.
// Throws Failure.
inline void run_program(const Options& opt) {
    Program prog = load_program(opt.program);
    ImageMemory memory(prog.dram);
    const Soc soc = Soc::from_fields(prog.hw.data());
    Machine<ImageMemory> machine(memory, opt.wave, {opt.cycle_limit, opt.watchdog, opt.drop_responses}, soc);
    if (soc.l2_warm) {
        for (const Segment& s : prog.inputs) machine.dram().warm(s.addr, s.len);
    }
    std::unique_ptr<InstrLog> log;
    if (opt.log) {
        log = std::make_unique<InstrLog>(prog.instrs.size());
        machine.keep_log(log.get());
    }
    machine.instrs() = prog.instrs;
    const auto t0 = std::chrono::steady_clock::now();
    machine.run_until([&] { return machine.done(); });
    const auto t1 = std::chrono::steady_clock::now();
    const uint64_t sim_ns =
        uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
    machine.check_cycle_counter();
    write_results(opt.results, machine, prog, sim_ns, log.get());
}

}  // namespace harness
