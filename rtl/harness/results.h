// The results file (read by simulators/verilator.py): cycles, the harness's time in its
// clock loop, the RTL's counters and the SoC's, the output DRAM segments and the optional log.
#pragma once
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#include "Vaccel_top.h"
#include "failure.h"
#include "instr_log.h"
#include "ports.h"
#include "program.h"
#include "systolic_isa.h"

namespace harness {

template <class Machine>
void write_results(const std::string& path, const Machine& machine, const Program& prog, uint64_t sim_ns,
                   const InstrLog* log) {
    const Vaccel_top& top = machine.top();
    std::ofstream out(path, std::ios::binary);
    if (!out) fail(2, "cannot write results file " + path);
    auto put = [&](const void* p, size_t n) {
        out.write(static_cast<const char*>(p), std::streamsize(n));
    };
    auto put64 = [&](uint64_t v) { put(&v, 8); };
    auto put32 = [&](uint32_t v) { put(&v, 4); };
    put("SYSRES01", 8);
    put64(machine.cycles());
    put64(sim_ns);
    auto counter = [&](const char* name, uint64_t value) {
        const uint16_t n = uint16_t(std::strlen(name));
        put(&n, 2);
        put(name, n);
        put64(value);
    };
    put32(uint32_t(N_COUNTERS + N_SOC_COUNTERS));
    for (int i = 0; i < N_COUNTERS; ++i) counter(COUNTER_NAMES[i], get64(top.ctr_o, i));
    for (int i = 0; i < N_SOC_COUNTERS; ++i) counter(SOC_COUNTER_NAMES[i], machine.soc_counter(i));
    put32(uint32_t(prog.outputs.size()));
    for (const auto& s : prog.outputs) {
        put64(s.addr);
        put64(s.len);
        put(prog.dram.data() + s.addr, s.len);
    }
    put32(log ? uint32_t(prog.instrs.size()) : 0u);
    if (log) log->write(put);
}

}  // namespace harness
