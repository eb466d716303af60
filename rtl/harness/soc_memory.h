// The memory behind the DMA in a Gemmini SoC (README, "The SoC model"): the system bus, an L2 and
// DRAM behind an 8-byte memory bus. Each request is timed when the DMA issues it, by reserving
// the resources it crosses in order:
// * Gemmini's own TileLink buffers (two each way), and the system bus's A channel (a Get's one
//   beat, a Put's data);
// * the L2's request pipeline, one block a cycle in order: a miss that waits for an MSHR holds
//   back the requests behind it, as InclusiveCache's A channel stalls; a request to a set that an
//   MSHR works on waits until that MSHR is done, as the Scheduler queues it behind the MSHR
//   (rocket-chip-inclusive-cache Scheduler.scala:172-173);
// * its tags: a hit's data after `l2_hit` cycles; a miss takes an MSHR, fills from DRAM unless it
//   is a whole-block put, and crosses the L2 again; its victim, chosen at random as InclusiveCache
//   does, goes back to DRAM if dirty, and the MSHR waits for that write's answer;
// * the system bus's D channel, for read data and acknowledgements;
// * behind the L2, the memory bus: one A channel, which carries the fills' Gets (a beat each) and
//   the write-backs' data (their beats, in the order they come: the cache cork's arbiter prefers
//   write-backs, which is not modelled), and one D channel, which carries the fills' data and the
//   write-backs' answers (rocket-chip CacheCork.scala:101-109,171, ToAXI4.scala:153-228).
// DRAM is FASED's latency-bandwidth pipe: `dram_latency` cycles from a read's request to its first
// beat and from a write's last beat to its answer, `dram_inflight` reads and as many writes in
// flight, its channels independent (firesim be558e3f TimingModel.scala:226-239,
// LatencyBandwidthPipe.scala:60-81), so the memory bus's two channels are what it shares.
// Which bytes a request moves is the harness's business (dram.h); this model only says when.
#pragma once
#include <algorithm>
#include <cstdint>
#include <deque>
#include <queue>
#include <vector>

#include "systolic_isa.h"

namespace harness {

struct MemParams {
    uint32_t l2_kib = 0, l2_ways = 1, l2_hit = 1, l2_mshrs = 1, bus_beat = 16, mem_beat = 8;
    uint32_t dram_latency = 1, dram_inflight = 1;
    bool soc() const { return l2_kib > 0; }
};

// A channel that moves one beat a cycle: a transfer takes the first free cycles at or after its
// earliest start. A tracked one keeps its busy intervals until they pass, for the cycle stack.
class Channel {
  public:
    explicit Channel(bool tracked = false) : tracked_(tracked) {}

    uint64_t reserve(uint64_t earliest, uint64_t beats) {
        const uint64_t start = std::max(earliest, free_);
        free_ = start + beats;
        if (!tracked_) return start;
        if (!busy_.empty() && busy_.back().second == start) busy_.back().second = free_;
        else busy_.push_back({start, free_});
        return start;
    }
    bool busy_at(uint64_t cycle) {
        while (!busy_.empty() && busy_.front().second <= cycle) busy_.pop_front();
        return !busy_.empty() && busy_.front().first <= cycle;
    }

  private:
    const bool tracked_;
    uint64_t free_ = 0;
    std::deque<std::pair<uint64_t, uint64_t>> busy_;
};

// At most `n` in flight: a new one starts no earlier than the end of the one n before it.
class InFlight {
  public:
    explicit InFlight(uint32_t n) : ends_(n, 0) {}
    uint64_t earliest(uint64_t t) const { return std::max(t, ends_[next_]); }
    void record(uint64_t end) { ends_[next_] = end; next_ = (next_ + 1) % ends_.size(); }

  private:
    std::vector<uint64_t> ends_;
    size_t next_ = 0;
};

class SocMemory {
  public:
    static constexpr uint64_t BLOCK = 64;   // the L2's block, and the DRAM transfer of a fill
    // Gemmini's TLBuffer()s between its DMA and the system bus, each way (ucb-bar/gemmini 641fefb
    // Scratchpad.scala:200-202)
    static constexpr uint64_t DMA_BUFFERS = 2;

    explicit SocMemory(const MemParams& p)
        : p_(p), sets_(std::max<uint64_t>(1, uint64_t(p.l2_kib) * 1024 / BLOCK / p.l2_ways)),
          lines_(sets_ * p.l2_ways), set_free_(sets_, 0), mshr_(p.l2_mshrs, 0), dram_reads_(p.dram_inflight),
          dram_writes_(p.dram_inflight) {}

    // A Get of [addr, addr + len) issued at `t`: the cycle its last data beat has crossed the bus.
    uint64_t read(uint64_t t, uint64_t addr, uint32_t len) {
        const uint64_t at_l2 = a_.reserve(t + DMA_BUFFERS, 1) + 1;
        uint64_t done = at_l2;
        for_blocks(addr, len, [&](uint64_t block, uint32_t bytes) {
            const uint64_t ready = access(block, at_l2, false, false);
            const uint64_t beats = (bytes + p_.bus_beat - 1) / p_.bus_beat;
            done = std::max(done, d_.reserve(ready, beats) + beats);
        });
        return done + DMA_BUFFERS;
    }

    // A Put of [addr, addr + len) issued at `t`: the cycle its acknowledgement has crossed the bus.
    uint64_t write(uint64_t t, uint64_t addr, uint32_t len) {
        const uint64_t beats = (len + p_.bus_beat - 1) / p_.bus_beat;
        const uint64_t at_l2 = a_.reserve(t + DMA_BUFFERS, beats) + beats;
        uint64_t done = at_l2;
        for_blocks(addr, len, [&](uint64_t block, uint32_t bytes) {
            const uint64_t ready = access(block, at_l2, true, bytes == BLOCK);
            done = std::max(done, d_.reserve(ready, 1) + 1);
        });
        return done + DMA_BUFFERS;
    }

    // The blocks of [addr, addr + len) sit in the L2, dirty, as if the core had just written them.
    void warm(uint64_t addr, uint64_t len) {
        for (uint64_t b = addr / BLOCK; b * BLOCK < addr + len; ++b) install(b, 0, 0, true, false);
    }

    // One cycle of the memory stack: what the memory is doing at `cycle`, given whether the DMA
    // has requests outstanding.
    void account(uint64_t cycle, bool outstanding) {
        while (!fills_.empty() && fills_.top() <= cycle) fills_.pop();
        int s = SOC_MEM_IDLE;
        if (mem_d_.busy_at(cycle)) s = SOC_MEM_MBUS_D;
        else if (mem_a_.busy_at(cycle)) s = SOC_MEM_MBUS_A;
        else if (!fills_.empty()) s = SOC_MEM_DRAM_WAIT;
        else if (outstanding) s = SOC_MEM_L2;
        ++counters_[s];
        state_ = s;
    }

    uint64_t counter(int i) const { return counters_[i]; }
    int state() const { return state_; }   // the last accounted cycle's (a SOC_MEM_* index)

  private:
    struct Line { uint64_t tag = 0, ready = 0; bool valid = false, dirty = false; };

    template <class Each> static void for_blocks(uint64_t addr, uint32_t len, Each each) {
        for (uint64_t a = addr; a < addr + len;) {
            const uint64_t end = std::min<uint64_t>(addr + len, (a / BLOCK + 1) * BLOCK);
            each(a / BLOCK, uint32_t(end - a));
            a = end;
        }
    }

    // A block's access entering the L2's tags at `t`; returns when its data (or its write) is done.
    // A miss holds an MSHR until its fill is in and its dirty victim has gone out to DRAM.
    uint64_t access(uint64_t block, uint64_t arrive, bool write, bool full) {
        uint64_t& set_free = set_free_[block % sets_];
        const uint64_t t = std::max(l2_pipe_.reserve(arrive, 1), set_free);
        Line* line = find(block);
        if (line) {
            ++counters_[write ? SOC_L2_WRITE_HITS : SOC_L2_READ_HITS];
            line->dirty |= write;
            return std::max(t, line->ready) + p_.l2_hit;
        }
        ++counters_[write ? SOC_L2_WRITE_MISSES : SOC_L2_READ_MISSES];
        auto slot = std::min_element(mshr_.begin(), mshr_.end());
        if (*slot > t) l2_pipe_.reserve(*slot, 1);   // the requests behind it wait with it
        const uint64_t start = std::max(t, *slot) + p_.l2_hit;   // the tags said miss
        const uint64_t fill = write && full ? start : dram_read(start);
        const uint64_t ready = fill + p_.l2_hit;   // the L2 again: the fill's or the put's data in
        *slot = set_free = std::max(ready, install(block, start, ready, write));
        if (ready > t) fills_.push(ready);
        return ready;
    }

    Line* find(uint64_t block) {
        Line* set = &lines_[(block % sets_) * p_.l2_ways];
        for (uint32_t w = 0; w < p_.l2_ways; ++w) {
            if (set[w].valid && set[w].tag == block / sets_) return &set[w];
        }
        return nullptr;
    }

    // A way of the block's set, chosen at random (InclusiveCache's victimLFSR, which prefers no
    // invalid way: rocket-chip-inclusive-cache 85420cf2 Directory.scala:115-120), takes it, its data
    // there at `ready`; a dirty victim is written back from `evict` (unless the program has not
    // started: warm()). Returns when DRAM has answered that write (`evict` if there is none).
    uint64_t install(uint64_t block, uint64_t evict, uint64_t ready, bool dirty, bool write_back = true) {
        Line& victim = lines_[(block % sets_) * p_.l2_ways + next_random() % p_.l2_ways];
        uint64_t answered = evict;
        if (victim.valid && victim.dirty && write_back) {
            ++counters_[SOC_L2_WRITEBACKS];
            answered = dram_write(evict);
        }
        victim = {block / sets_, ready, true, dirty};
        return answered;
    }

    // a 16-bit maximal-length Galois LFSR (x^16 + x^14 + x^13 + x^11 + 1), one step a victim
    uint32_t next_random() {
        lfsr_ = uint16_t((lfsr_ >> 1) ^ (-(lfsr_ & 1u) & 0xB400u));
        return lfsr_;
    }

    // a block read from DRAM, asked at `t`: its Get on the memory bus's A channel, DRAM's latency, its
    // beats on the D channel; returns when the last has arrived
    uint64_t dram_read(uint64_t t) {
        const uint64_t beats = BLOCK / p_.mem_beat;
        const uint64_t asked = mem_a_.reserve(dram_reads_.earliest(t), 1) + 1;
        const uint64_t start = mem_d_.reserve(asked + p_.dram_latency, beats);
        dram_reads_.record(start + beats);
        counters_[SOC_DRAM_BYTES_READ] += BLOCK;
        return start + beats;
    }
    // a block written to DRAM from `t`: its beats on the A channel, DRAM's latency, its answer's beat
    // on the D channel; returns when that has arrived
    uint64_t dram_write(uint64_t t) {
        const uint64_t beats = BLOCK / p_.mem_beat;
        const uint64_t sent = mem_a_.reserve(dram_writes_.earliest(t), beats) + beats;
        const uint64_t answer = mem_d_.reserve(sent + p_.dram_latency, 1) + 1;
        dram_writes_.record(answer);
        counters_[SOC_DRAM_BYTES_WRITTEN] += BLOCK;
        return answer;
    }

    const MemParams p_;
    const uint64_t sets_;
    std::vector<Line> lines_;
    std::vector<uint64_t> set_free_;   // when the MSHR working on each set is done
    std::vector<uint64_t> mshr_;   // when each is free again
    InFlight dram_reads_, dram_writes_;
    Channel a_, d_, l2_pipe_;                          // the system bus's, the L2's
    Channel mem_a_{true}, mem_d_{true};                // the memory bus's: the memory stack reads them
    std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<uint64_t>> fills_;
    uint16_t lfsr_ = 1;
    int state_ = SOC_MEM_IDLE;
    uint64_t counters_[N_SOC_COUNTERS] = {};   // the host's entries stay zero here
};

}  // namespace harness
