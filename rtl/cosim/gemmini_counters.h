// Gemmini's performance counters as its COUNTER_OP (funct 126) drives them: eight slots, each
// set to count one event; rs1 bit 0 resets every slot, bit 1 drops the snapshot, bit 2 takes
// one (reads then return it), bit 3 sets slot rs1[6:4] to event rs1[17:12] (plus 44 when
// bit 31 marks Gemmini's external counters); every op returns the value of slot rs1[6:4].
// An event is one of the accelerator's own counters (GEMMINI_EVENTS, generated from isa/);
// a slot counts from when it was set or reset. Gemmini's external RESERVATION_STATION_LD/ST/EX_COUNT
// (44 + 1, 2, 3) are levels, not counts: the entries of that reservation-station queue at the read
// (ucb-bar/gemmini 641fefb ReservationStation.scala's utilization_ld_q / _st_q / _ex_q, which
// CounterFile passes through as they are), here dispatch's queue occupancy. Events we do not model
// read 0.
#pragma once
#include <cstdint>
#include <cstdio>

#include "engine.h"
#include "systolic_isa.h"

namespace cosim {

class GemminiCounters {
  public:
    static constexpr int SLOTS = 8;
    static constexpr uint64_t EXTERNAL_BASE = 44;   // Gemmini's INCREMENTAL_COUNTERS

    uint64_t op(const Engine& engine, uint64_t rs1) {
        const int slot = int((rs1 >> 4) & 7);
        if (rs1 & 1) {
            for (Slot& s : slots_) s.base = now(engine, s);
        }
        if (rs1 & 2) snapshot_ = false;
        if (rs1 & 4) {
            for (int i = 0; i < SLOTS; ++i) snap_[i] = value(engine, slots_[i]);
            snapshot_ = true;
        }
        if (rs1 & 8) {
            const uint64_t code = (rs1 >> 12) & 0x3f;
            Slot& s = slots_[slot];
            const uint64_t event = code + ((rs1 >> 31) & 1 ? EXTERNAL_BASE : 0);
            s.queue = queue_of(event);
            s.counter = s.queue < 0 ? counter_of(event) : -1;
            s.base = now(engine, s);
        }
        return snapshot_ ? snap_[slot] : value(engine, slots_[slot]);
    }

  private:
    // counter -1: no counter (queue >= 0: a reservation-station count, else no event we model)
    struct Slot { int counter = -1; int queue = -1; uint64_t base = 0; };

    // RESERVATION_STATION_LD_COUNT, _ST_COUNT, _EX_COUNT -> dispatch's queue (0 LD, 1 EX, 2 ST), else -1
    static int queue_of(uint64_t event) {
        switch (event) {
            case EXTERNAL_BASE + 1: return 0;
            case EXTERNAL_BASE + 2: return 2;
            case EXTERNAL_BASE + 3: return 1;
            default: return -1;
        }
    }

    static int counter_of(uint64_t event) {
        for (const GemminiEvent& e : GEMMINI_EVENTS) {
            if (e.event == event) return e.counter;
        }
        if (event) std::fprintf(stderr, "systolic: Gemmini counter event %llu is not modelled; it reads 0\n",
                                (unsigned long long)event);
        return -1;
    }
    static uint64_t now(const Engine& engine, const Slot& s) {
        return s.counter < 0 ? 0 : engine.counter(s.counter);
    }
    static uint64_t value(const Engine& engine, const Slot& s) {
        return s.queue >= 0 ? engine.rs_count(s.queue) : now(engine, s) - s.base;
    }

    Slot slots_[SLOTS];
    uint64_t snap_[SLOTS] = {};
    bool snapshot_ = false;
};

}  // namespace cosim
