// The accelerator, the host that issues its words (host.h) and its DRAM (dram.h), clocked:
// instructions go in at the command port in order, and run_until() clocks the model until a
// condition holds, a limit is reached or the watchdog sees no progress. The harness (run.h) gives
// it a program file's instructions and DRAM image; the co-simulation runtime (rtl/cosim) the words a C program issues and
// that program's own memory.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "Vaccel_top.h"
#include "dram.h"
#include "failure.h"
#include "host.h"
#include "instr_log.h"
#include "model.h"
#include "ports.h"
#include "program.h"
#include "stall_report.h"
#include "systolic_isa.h"

namespace harness {

struct Limits {
    uint64_t cycle_limit = 0, watchdog = 100000;   // cycle_limit 0: none
    bool drop_responses = false;
};

// The timing of the SoC around the accelerator: the HardwareConfig fields that no RTL parameter
// holds (HW_TIMING in systolic_cfg.h), which a program file or the C runtime gives at run time.
struct Soc {
    HostParams host;
    MemParams mem;
    uint32_t dma_inflight = 1;
    bool l2_warm = false;

    // from the hardware fields in HardwareConfig.hardware_fields() order
    static Soc from_fields(const uint32_t* v) {
        Soc s;
        s.host = {v[HWF_HOST_CMD_CYCLES], v[HWF_ROCC_QUEUE], v[HWF_ROCC_LATENCY]};
        s.mem = {v[HWF_L2_KIB], v[HWF_L2_WAYS], v[HWF_L2_HIT_CYCLES], v[HWF_L2_MSHRS], CFG_DMA_BEAT_BYTES,
                 v[HWF_MEM_BEAT_BYTES], v[HWF_DRAM_LATENCY], v[HWF_DRAM_INFLIGHT]};
        s.dma_inflight = v[HWF_DMA_INFLIGHT];
        s.l2_warm = v[HWF_L2_WARM] != 0;
        return s;
    }
};

// a word at a time: the bits past N_SLOTS are zero
inline bool any_done(const Vaccel_top& top) {
    for (int w = 0; w < (N_SLOTS + 31) / 32; ++w) {
        if (get32(top.ev_done_o, w)) return true;
    }
    return false;
}

template <class Memory> class Machine {
  public:
    Machine(Memory& mem, const std::string& wave, const Limits& limits, const Soc& soc)
        : limits_(limits), model_(wave), top_(model_.top()),
          dram_(mem, limits.drop_responses, soc.mem, soc.dma_inflight), host_(soc.host) {
        model_.reset();
    }

    std::vector<Instr>& instrs() { return instrs_; }
    // Drop the words the RTL has taken, so that a long C program's words do not pile up; the
    // indexes into instrs() move down by that many (the RTL's own numbers do not).
    void forget_dispatched() {
        instrs_.erase(instrs_.begin(), instrs_.begin() + std::ptrdiff_t(pc_));
        if (!host_.free()) host_.rebase(pc_);
        base_ += pc_;
        pc_ = 0;
    }
    const Vaccel_top& top() const { return top_; }
    uint64_t cycles() const { return cycles_; }
    uint64_t dispatched() const { return pc_; }
    void keep_log(InstrLog* log) { log_ = log; }
    Dram<Memory>& dram() { return dram_; }
    // the SoC's counters (SOC_COUNTER_NAMES): the host's and the memory's
    uint64_t soc_counter(int i) const { return host_.counter(i) + dram_.counter(i); }

    // Every instruction taken and the machine and its DRAM port idle.
    bool done() const { return pc_ == instrs_.size() && top_.idle_o && dram_.idle(); }

    // Clock at least one cycle, then until until() holds; throws Failure at a limit or on
    // the watchdog.
    template <class Until> void run_until(Until until) {
        for (;;) {
            if (step()) last_progress_ = cycles_;
            if (until()) return;
            check_limits();
        }
    }

    // the RTL counts its own cycles: a counter that disagrees with the clock is a bug
    void check_cycle_counter() const {
        const uint64_t rtl_cycles = get64(top_.ctr_o, CTR_CYCLES);
        if (rtl_cycles != cycles_) {
            fail(5, "the RTL's cycle counter reads " + std::to_string(rtl_cycles) +
                        " but the harness ran " + std::to_string(cycles_) + " cycles");
        }
    }

  private:
    // One clock cycle; returns whether anything moved (an instruction taken or completed,
    // a DMA handshake or beat), which is what the watchdog waits for.
    bool step() {
        const uint64_t cycle = cycles_;
        const bool cmd_valid = offer();
        dram_.drive(top_, cycles_);
        model_.falling();
        const bool cmd_fire = cmd_valid && top_.cmd_ready_o;
        bool progress = dram_.sample(top_, cycles_) | cmd_fire | any_done(top_) | host_moved_;
        if (log_) log_->record(top_, cycles_);
        model_.rising();
        ++cycles_;
        if (cmd_fire) {
            ++pc_;
            if (!host_.free()) host_.pop();
        }
        progress |= dram_.commit(cycles_);
        if (log_) {
            if (!host_.free()) log_->soc_state(0, cycle, host_.state(), host_word_starts_);
            host_word_starts_ = host_moved_;
            if (dram_.soc()) log_->soc_state(1, cycle, dram_.soc_state());
        }
        return progress;
    }

    // The next instruction on the command port: with free issue the next of all, else the one
    // at the head of the host's queues.
    bool offer() {
        uint64_t next = pc_;
        bool valid = pc_ < instrs_.size();
        if (!host_.free()) {
            host_moved_ = host_.advance(instrs_, cycles_, top_.idle_o && dram_.idle());
            valid = host_.head(cycles_, next);
        }
        top_.cmd_valid_i = valid;
        if (valid) {
            top_.cmd_funct_i = uint8_t(instrs_[next].funct);
            top_.cmd_rs1_i = instrs_[next].rs1;
            top_.cmd_rs2_i = instrs_[next].rs2;
        }
        return valid;
    }

    void check_limits() const {
        const uint64_t n_instr = instrs_.size();
        if (limits_.cycle_limit && cycles_ >= limits_.cycle_limit) {
            fail(4, "cycle limit of " + std::to_string(limits_.cycle_limit) + " cycles reached with " +
                        std::to_string(n_instr - pc_) + " of " + std::to_string(base_ + n_instr) +
                        " instructions not yet dispatched");
        }
        if (cycles_ - last_progress_ > limits_.watchdog) {
            fail(3, "watchdog: no progress for " + std::to_string(limits_.watchdog) +
                        " cycles (at cycle " + std::to_string(cycles_) + "); " +
                        stall_report(top_, instrs_, base_, pc_, dram_));
        }
    }

    const Limits limits_;
    Model model_;
    Vaccel_top& top_;
    Dram<Memory> dram_;
    Host host_;
    bool host_moved_ = false, host_word_starts_ = false;   // a word left the host (this cycle, the last)
    std::vector<Instr> instrs_;
    InstrLog* log_ = nullptr;
    uint64_t pc_ = 0, cycles_ = 0, last_progress_ = 0;
    uint64_t base_ = 0;   // the number of the first word in instrs_ (forget_dispatched)
};

}  // namespace harness
