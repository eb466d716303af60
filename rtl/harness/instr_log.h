// The per-instruction log (--log): the cycles each instruction was dispatched, issued
// and completed, and the unit that issued it; on the SoC, the host's and the memory's states
// as runs (the cycle each run starts and its SOC_* counter index; the host's a run per word).
#pragma once
#include <cstdint>
#include <vector>

#include "Vaccel_top.h"
#include "ports.h"

namespace harness {

class InstrLog {
  public:
    static constexpr uint64_t NEVER = ~uint64_t(0);   // the results file's "no cycle"
    static constexpr uint8_t NO_UNIT = 3;             // no unit issued it (yet)

    explicit InstrLog(uint64_t n)
        : disp_(n, NEVER), issue_(n, NEVER), done_(n, NEVER), unit_(n, NO_UNIT) {}

    void record(const Vaccel_top& top, uint64_t cycle) {
        const uint64_t n = disp_.size();
        if (top.ev_disp_valid_o && top.ev_disp_seq_o < n) disp_[top.ev_disp_seq_o] = cycle;
        for (int q = 0; q < 3; ++q) {
            if (!((top.ev_issue_o >> q) & 1)) continue;
            const uint32_t seq = get32(top.ev_issue_seq_o, q);
            if (seq < n) { issue_[seq] = cycle; unit_[seq] = uint8_t(q); }
        }
        for (int s = 0; s < N_SLOTS; ++s) {
            if (!getbit(top.ev_done_o, s)) continue;
            const uint32_t seq = get32(top.ev_slot_seq_o, s);
            if (seq < n) done_[seq] = cycle;
        }
    }

    // stack 0 the host's, 1 the memory's: a new run where the state changes, or where `fresh` says
    // one starts (the host's next word)
    void soc_state(int stack, uint64_t cycle, int state, bool fresh = false) {
        auto& runs = runs_[stack];
        if (fresh || runs.empty() || runs.back().state != state) runs.push_back({cycle, uint8_t(state)});
    }

    // Its records in the results file's layout, through put(pointer, bytes): the instructions',
    // then per stack a count and its runs.
    template <class Put> void write(Put put) const {
        for (size_t i = 0; i < disp_.size(); ++i) {
            put(&disp_[i], 8);
            put(&issue_[i], 8);
            put(&done_[i], 8);
            put(&unit_[i], 1);
        }
        for (const auto& runs : runs_) {
            const uint32_t n = uint32_t(runs.size());
            put(&n, 4);
            for (const Run& r : runs) {
                put(&r.start, 8);
                put(&r.state, 1);
            }
        }
    }

  private:
    struct Run { uint64_t start; uint8_t state; };
    std::vector<Run> runs_[2];
    std::vector<uint64_t> disp_, issue_, done_;
    std::vector<uint8_t> unit_;
};

}  // namespace harness
