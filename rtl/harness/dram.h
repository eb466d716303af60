// The DRAM behind the accelerator's DMA ports (see the README, "The DRAM model" and "The SoC
// model"). Each cycle drive() sets the ready, response and acknowledgement inputs; sample() reads
// the handshakes before the clock edge, commit() applies them after it. Two timings: the ideal
// port (one memory port that moves CFG_DMA_BEAT_BYTES a cycle after a fixed latency, the
// accelerator alone) or, with an L2 configured, the SoC's memory (soc_memory.h).
// Where the bytes live is the Memory's business: check(addr, len, what) refuses a transfer
// (it throws) when the DMA takes it, and read/write copy its bytes when they move (and may throw
// then: the C runtime's memory can change between the two). ImageMemory is the program file's DRAM image;
// the co-simulation runtime's ProcessMemory is the C program's own address space.
#pragma once
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "Vaccel_top.h"
#include "failure.h"
#include "ports.h"
#include "program.h"
#include "soc_memory.h"
#include "systolic_cfg.h"

namespace harness {

// The program file's DRAM image: addresses are offsets into it.
class ImageMemory {
  public:
    explicit ImageMemory(std::vector<uint8_t>& image) : image_(image) {}
    void check(uint64_t addr, uint32_t len, const char* what) const {
        if (addr + len > image_.size() - DRAM_SLACK)
            fail(2, std::string("DMA ") + what + " past the end of DRAM");
    }
    void read(uint64_t addr, uint8_t* dst, uint32_t len) { std::memcpy(dst, image_.data() + addr, len); }
    void write(uint64_t addr, const uint8_t* src, uint32_t len) { std::memcpy(image_.data() + addr, src, len); }

  private:
    std::vector<uint8_t>& image_;
};

template <class Memory> class Dram {
  public:
    // inflight: reads accepted and not yet answered (and, apart, writes not yet acknowledged)
    Dram(Memory& mem, bool drop_responses, const MemParams& p, uint32_t inflight)
        : mem_(mem), drop_(drop_responses), p_(p), inflight_(inflight), soc_(p) {}

    void drive(Vaccel_top& top, uint64_t cycle) {
        top.dma_rd_req_ready_i = reads_ < inflight_;
        top.dma_wr_req_ready_i = writes_ < inflight_;
        resp_valid_ = !drop_ && !resps_.empty() && resps_.front().avail <= cycle;
        top.dma_rd_resp_valid_i = resp_valid_;
        if (resp_valid_ && presented_ != resp_id_) {
            // the row is read from DRAM when its response is first presented
            const Resp& r = resps_.front();
            top.dma_rd_resp_tag_i = r.tag;
            rdata_.resize(r.len);
            mem_.read(r.addr, rdata_.data(), r.len);
            set_bytes(top.dma_rd_resp_data_i, rdata_.data(), r.len);
            presented_ = resp_id_;
        }
        ack_valid_ = !acks_.empty() && acks_.front().avail <= cycle;
        top.dma_wr_ack_valid_i = ack_valid_;
        if (ack_valid_) top.dma_wr_ack_tag_i = acks_.front().tag;
    }

    // The handshakes of this edge, sampled before it; returns whether any happened.
    bool sample(const Vaccel_top& top, uint64_t cycle) {
        rd_fire_ = top.dma_rd_req_valid_o && top.dma_rd_req_ready_i;
        wr_fire_ = top.dma_wr_req_valid_o && top.dma_wr_req_ready_i;
        resp_fire_ = resp_valid_ && top.dma_rd_resp_ready_o;
        if (rd_fire_) {
            rd_ = {true, cycle, cycle + p_.dram_latency, 0, top.dma_rd_req_tag_o, top.dma_rd_req_addr_o,
                   top.dma_rd_req_len_o};
        }
        if (wr_fire_) {
            wr_ = {false, cycle, cycle + 1, 0, top.dma_wr_req_tag_o, top.dma_wr_req_addr_o,
                   top.dma_wr_req_len_o};
            wdata_.resize(wr_.len);
            get_bytes(top.dma_wr_req_data_o, wdata_.data(), wr_.len);
        }
        return rd_fire_ || wr_fire_ || resp_fire_ || ack_valid_;
    }

    // After the edge at `cycle`: retire what was taken, accept the new requests and, on the
    // ideal port, move one beat of the oldest ready transfer; returns whether the port moved.
    bool commit(uint64_t cycle) {
        if (resp_fire_) { resps_.pop_front(); --reads_; ++resp_id_; }
        if (ack_valid_) { acks_.pop_front(); --writes_; }
        if (rd_fire_) {
            accept(rd_, "read");
            ++reads_;
        }
        if (wr_fire_) {
            accept(wr_, "write");
            mem_.write(wr_.addr, wdata_.data(), wr_.len);   // visible at once
            ++writes_;
        }
        if (!p_.soc()) return move_beat(cycle);
        soc_.account(cycle, reads_ + writes_ > 0);
        return false;
    }

    // The SoC's L2 holds [addr, addr + len) when the program starts (HardwareConfig.l2_warm).
    void warm(uint64_t addr, uint64_t len) {
        if (p_.soc()) soc_.warm(addr, len);
    }
    uint64_t counter(int i) const { return soc_.counter(i); }
    bool soc() const { return p_.soc(); }
    int soc_state() const { return soc_.state(); }

    bool idle() const { return xfers_.empty() && resps_.empty() && acks_.empty(); }
    bool dropping() const { return drop_; }
    size_t transfers() const { return xfers_.size(); }
    size_t responses() const { return resps_.size(); }

  private:
    struct Xfer { bool read; uint64_t at, ready; uint32_t beats, tag; uint64_t addr; uint32_t len; };
    struct Resp { uint64_t avail; uint32_t tag; uint64_t addr; uint32_t len; };
    struct Ack { uint64_t avail; uint32_t tag; };

    static uint32_t beats_of(uint64_t addr, uint32_t len) {
        const uint64_t b = CFG_DMA_BEAT_BYTES;
        return uint32_t((addr + len + b - 1) / b - addr / b);
    }
    // On the SoC the memory says when the answer comes (in order after the one before it); on
    // the ideal port the transfer queues for its beats.
    void accept(Xfer& x, const char* what) {
        mem_.check(x.addr, x.len, what);
        if (p_.soc()) {
            if (x.read) {
                last_resp_ = std::max(last_resp_, soc_.read(x.at, x.addr, x.len));
                resps_.push_back({last_resp_, x.tag, x.addr, x.len});
            } else {
                last_ack_ = std::max(last_ack_, soc_.write(x.at, x.addr, x.len));
                acks_.push_back({last_ack_, x.tag});
            }
            return;
        }
        x.beats = beats_of(x.addr, x.len);   // the beat-aligned span of its bytes
        xfers_.push_back(x);
    }
    // One beat of the oldest transfer that is ready; its last beat queues its answer.
    bool move_beat(uint64_t cycle) {
        for (auto it = xfers_.begin(); it != xfers_.end(); ++it) {
            if (it->ready > cycle) continue;
            if (--it->beats == 0) {
                if (it->read) resps_.push_back({cycle + 1, it->tag, it->addr, it->len});
                else acks_.push_back({cycle + 1, it->tag});
                xfers_.erase(it);
            }
            return true;
        }
        return false;
    }

    Memory& mem_;
    const bool drop_;
    const MemParams p_;
    const uint32_t inflight_;
    SocMemory soc_;
    uint64_t last_resp_ = 0, last_ack_ = 0;
    std::deque<Xfer> xfers_;   // accepted, moving through the port in order
    std::deque<Resp> resps_;   // read rows waiting to go back, in order
    std::deque<Ack> acks_;
    uint32_t reads_ = 0, writes_ = 0;
    uint64_t presented_ = ~uint64_t(0), resp_id_ = 0;   // the response on the port: none yet
    bool resp_valid_ = false, ack_valid_ = false, rd_fire_ = false, wr_fire_ = false;
    bool resp_fire_ = false;
    Xfer rd_{}, wr_{};
    std::vector<uint8_t> wdata_, rdata_;
};

}  // namespace harness
