// The core that issues every command (README, "The SoC model"): it spends `cmd_cycles` on each
// word (a fence: one cycle, its one instruction), pushes it into the RoCC queues between the core
// and the accelerator (`queue` entries, `latency` cycles from the core's side to the accelerator's
// command port), and after a fence waits
// until the accelerator is idle before it goes on. A word that finds the queues full is refused
// and replayed as Rocket replays it (rocket-chip c1dda582 RocketCore.scala:766-770, 1058-1069):
// flushed from writeback and refetched, it leaves at the earliest REPLAY cycles after the refusal
// and RESUME cycles after the queues have room again. cmd_cycles 0 is the accelerator alone: words
// reach the command port as fast as it takes them, as before the model.
#pragma once
#include <algorithm>
#include <cstdint>
#include <deque>
#include <vector>

#include "instr.h"
#include "systolic_isa.h"

namespace harness {

struct HostParams {
    uint32_t cmd_cycles = 0, queue = 1, latency = 0;
};

class Host {
  public:
    static constexpr uint64_t REPLAY = 5;   // writeback to writeback again, through a refetch
    static constexpr uint64_t RESUME = 4;   // from decode, where it waited for room, to writeback

    static constexpr uint64_t FENCE = 1;    // a fence is one instruction of the issue code

    explicit Host(const HostParams& p) : p_(p) {}

    bool free() const { return p_.cmd_cycles == 0; }

    // Before the edge at `cycle`: move what the core has ready into the queues, given how many
    // words exist and whether the accelerator is idle; returns whether a word moved. Each cycle
    // counts in one of the host's states (SOC_HOST_*), so that they sum to the total.
    bool advance(const std::vector<Instr>& instrs, uint64_t cycle, bool accel_idle) {
        int s = SOC_HOST_DONE;
        bool moved = false;
        if (fence_wait_ && accel_idle && queue_.empty()) {
            fence_wait_ = false;
            start_ = cycle;   // the next word's cycles start now
        }
        if (fence_wait_) {
            s = SOC_HOST_FENCE;
        } else if (pushed_ < instrs.size()) {
            const bool fence = instrs[pushed_].funct == FUNCT_FENCE;
            moved = cycle + 1 >= start_ + (fence ? FENCE : p_.cmd_cycles) && push(cycle, fence);
            s = refused_ ? SOC_HOST_QUEUE_FULL : SOC_HOST_ISSUE;
        }
        ++counters_[s];
        state_ = s;
        return moved;
    }

    // The word at the accelerator's command port this cycle, if any (an index into the words).
    bool head(uint64_t cycle, uint64_t& index) const {
        if (queue_.empty() || queue_.front().ready > cycle) return false;
        index = queue_.front().index;
        return true;
    }
    void pop() { queue_.pop_front(); }
    // The words before `n` are forgotten (Machine::forget_dispatched): indexes move down by n.
    void rebase(uint64_t n) {
        pushed_ -= n;
        for (Entry& e : queue_) e.index -= n;
    }
    bool idle() const { return queue_.empty() && !fence_wait_; }
    uint64_t counter(int i) const { return counters_[i]; }
    int state() const { return state_; }   // this cycle's (a SOC_HOST_* index)

  private:
    // The word is ready at `cycle`: into the queues if they have room, else refused (and replayed).
    bool push(uint64_t cycle, bool fence) {
        const bool room = queue_.size() < p_.queue;
        if (!refused_ && !room) {
            refused_ = true;
            retry_ = cycle + REPLAY;
        } else if (refused_ && room && room_at_ == NONE) {
            room_at_ = cycle;
        }
        if (refused_ && (room_at_ == NONE || cycle < std::max(retry_, room_at_ + RESUME))) return false;
        queue_.push_back({pushed_, cycle + p_.latency});
        fence_wait_ = fence;
        ++pushed_;
        start_ = cycle + 1;
        refused_ = false;
        room_at_ = NONE;
        return true;
    }

    struct Entry { uint64_t index, ready; };
    static constexpr uint64_t NONE = ~uint64_t(0);
    const HostParams p_;
    std::deque<Entry> queue_;
    uint64_t pushed_ = 0, start_ = 0, retry_ = 0;   // start_: when the next word's cycles began
    bool fence_wait_ = false, refused_ = false;
    int state_ = SOC_HOST_DONE;
    uint64_t room_at_ = NONE;   // after a refusal, the first cycle the queues had room
    uint64_t counters_[N_SOC_COUNTERS] = {};   // the memory's entries stay zero here
};

}  // namespace harness
