// One program from its file to its results file: the clock loop feeds the instructions,
// moves the DRAM port and stops at completion, at the cycle limit or on the watchdog.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "Vaccel_top.h"
#include "args.h"
#include "dram.h"
#include "failure.h"
#include "instr_log.h"
#include "model.h"
#include "ports.h"
#include "program.h"
#include "results.h"
#include "stall_report.h"
#include "systolic_isa.h"

namespace harness {

// a word at a time: the bits past N_SLOTS are zero
inline bool any_done(const Vaccel_top& top) {
    for (int w = 0; w < (N_SLOTS + 31) / 32; ++w) {
        if (get32(top.ev_done_o, w)) return true;
    }
    return false;
}

// Each run builds its own: a fresh model and DRAM, so nothing of one program reaches the next.
class Run {
  public:
    explicit Run(const Options& opt)
        : opt_(opt), prog_(load_program(opt.program)), model_(opt.wave), top_(model_.top()),
          dram_(prog_.dram, opt.drop_responses) {
        if (opt.log) log_ = std::make_unique<InstrLog>(prog_.instrs.size());
    }

    // Throws Failure.
    void go() {
        model_.reset();
        const auto t0 = std::chrono::steady_clock::now();
        for (;;) {
            if (step()) last_progress_ = cycle_;
            if (pc_ == prog_.instrs.size() && top_.idle_o && dram_.idle()) break;
            check_limits();
        }
        const auto t1 = std::chrono::steady_clock::now();
        const uint64_t sim_ns =
            uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
        check_cycle_counter();
        write_results(opt_.results, top_, prog_, cycle_, sim_ns, log_.get());
    }

  private:
    // One clock cycle; returns whether anything moved (an instruction taken or completed,
    // a DMA handshake or beat), which is what the watchdog waits for.
    bool step() {
        const bool cmd_valid = offer();
        dram_.drive(top_, cycle_);
        model_.falling();
        const bool cmd_fire = cmd_valid && top_.cmd_ready_o;
        bool progress = dram_.sample(top_, cycle_) | cmd_fire | any_done(top_);
        if (log_) log_->record(top_, cycle_);
        model_.rising();
        ++cycle_;
        if (cmd_fire) ++pc_;
        progress |= dram_.commit(cycle_);
        return progress;
    }

    // The next instruction on the command port, until all are dispatched.
    bool offer() {
        const bool valid = pc_ < prog_.instrs.size();
        top_.cmd_valid_i = valid;
        if (valid) {
            top_.cmd_funct_i = uint8_t(prog_.instrs[pc_].funct);
            top_.cmd_rs1_i = prog_.instrs[pc_].rs1;
            top_.cmd_rs2_i = prog_.instrs[pc_].rs2;
        }
        return valid;
    }

    void check_limits() const {
        const uint64_t n_instr = prog_.instrs.size();
        if (opt_.cycle_limit && cycle_ >= opt_.cycle_limit) {
            fail(4, "cycle limit of " + std::to_string(opt_.cycle_limit) + " cycles reached with " +
                        std::to_string(n_instr - pc_) + " of " + std::to_string(n_instr) +
                        " instructions not yet dispatched");
        }
        if (cycle_ - last_progress_ > opt_.watchdog) {
            fail(3, "watchdog: no progress for " + std::to_string(opt_.watchdog) +
                        " cycles (at cycle " + std::to_string(cycle_) + "); " +
                        stall_report(top_, prog_, pc_, dram_));
        }
    }

    // the RTL counts its own cycles: a counter that disagrees with the clock is a bug
    void check_cycle_counter() const {
        const uint64_t rtl_cycles = get64(top_.ctr_o, CTR_CYCLES);
        if (rtl_cycles != cycle_) {
            fail(5, "the RTL's cycle counter reads " + std::to_string(rtl_cycles) +
                        " but the harness ran " + std::to_string(cycle_) + " cycles");
        }
    }

    const Options& opt_;
    Program prog_;
    Model model_;
    Vaccel_top& top_;
    Dram dram_;
    std::unique_ptr<InstrLog> log_;
    uint64_t pc_ = 0, cycle_ = 0, last_progress_ = 0;
};

inline void run_program(const Options& opt) { Run(opt).go(); }

}  // namespace harness
