// The watchdog's error message: what dispatch and each unit wait on.
#pragma once
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "Vaccel_top.h"
#include "ports.h"
#include "program.h"
#include "systolic_cfg.h"

namespace harness {

// `instrs` holds the words from number `base` on (the C runtime forgets those dispatched long ago);
// `pc` indexes it.
inline void report_dispatch(std::ostringstream& m, const Vaccel_top& top,
                            const std::vector<Instr>& instrs, uint64_t base, uint64_t pc) {
    if (pc >= instrs.size()) {
        m << "all instructions dispatched; ";
        return;
    }
    m << "dispatch holds instr #" << base + pc << " (" << op_name(instrs[pc]) << ")"
      << (top.dbg_fence_o ? ", a fence waiting for all earlier instructions"
                          : ", its queue is full")
      << "; ";
}

// Queue q's candidate for issue and the hazards that hold it.
inline void report_unit(std::ostringstream& m, const Vaccel_top& top, const std::vector<Instr>& instrs,
                        uint64_t base, int q) {
    static const char* const names[3] = {"load", "execute", "store"};
    auto name = [&](uint32_t seq) {
        return seq >= base && seq - base < instrs.size() ? op_name(instrs[seq - base]) : "?";
    };
    const uint32_t waiting = getbits(top.dbg_waiting_o, q * (CFG_SLOT_W + 1), CFG_SLOT_W + 1);
    m << names[q] << " unit: ";
    if (waiting == 0) {
        m << "nothing waiting to issue; ";
        return;
    }
    const int cand = int(getbits(top.dbg_cand_slot_o, q * CFG_SLOT_W, CFG_SLOT_W));
    const uint32_t seq = get32(top.ev_slot_seq_o, cand);
    m << "instr #" << seq << " (" << name(seq) << ") waits";
    bool dep = false;
    for (int s = 0; s < N_SLOTS; ++s) {
        if (!getbit(top.dbg_cand_deps_o, q * N_SLOTS + s)) continue;
        const uint32_t ds = get32(top.ev_slot_seq_o, s);
        m << (dep ? ", " : " on a hazard with ") << "instr #" << ds << " (" << name(ds) << ", "
          << (getbit(top.dbg_issued_o, s) ? "issued, not complete" : "not issued") << ")";
        dep = true;
    }
    if (!dep && !((top.dbg_unit_ready_o >> q) & 1)) m << " for the unit to accept it";
    m << "; ";
}

// (a template over the DRAM, whose memory may be the program file's or the process's)
template <class Dram>
std::string stall_report(const Vaccel_top& top, const std::vector<Instr>& instrs, uint64_t base, uint64_t pc,
                         const Dram& dram) {
    std::ostringstream m;
    report_dispatch(m, top, instrs, base, pc);
    for (int q = 0; q < 3; ++q) report_unit(m, top, instrs, base, q);
    m << "load unit has " << top.dbg_ld_outstanding_o << " DMA reads outstanding"
      << (dram.dropping() ? " (responses are being dropped: --drop-dma-responses)" : "")
      << "; store unit has " << top.dbg_st_outstanding_o << " DMA writes unacknowledged"
      << "; execute state bits " << int(top.dbg_ex_state_o)
      << " (S streaming, W waits for a weight buffer, W loading, W waits for S)"
      << "; DRAM port has " << dram.transfers() << " transfers, " << dram.responses()
      << " responses queued";
    return m.str();
}

}  // namespace harness
