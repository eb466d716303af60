// Harness of the Verilated accelerator: reads a program file, models DRAM behind
// the DMA ports, feeds the instructions, runs to completion and writes a results
// file (cycles, counters, output DRAM segments, optional per-instruction log).
//
//   Vsim PROGRAM RESULTS [--log] [--trace-fst FILE | --trace-vcd FILE] [--cycle-limit N]
//                        [--watchdog N] [--drop-dma-responses]
// (a waveform needs a model built with Verilator's --trace-fst or --trace)
//
// DRAM model: one memory port moving dma_beat_bytes a cycle. A read is ready
// dram_latency cycles after it is accepted, a write one cycle after; each cycle
// the port moves one beat of the oldest ready transfer (a transfer covers the
// beat-aligned span of its bytes). A read's row goes back to the accelerator the
// cycle after its last beat, in request order; a write is acknowledged the cycle
// after its last beat. At most MAX_READS reads and MAX_WRITES writes are in flight.
//
// Exit status: 0 done, 2 bad arguments or program file, 3 watchdog (no progress),
// 4 cycle limit reached, 5 the RTL's cycle counter disagrees with the harness's count.
// Errors go to stderr, one paragraph.
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "Vaccel_top.h"
#include "verilated.h"
#include "systolic_cfg.h"
#include "systolic_isa.h"
#if VM_TRACE_FST
#include "verilated_fst_c.h"
using TraceFile = VerilatedFstC;
#elif VM_TRACE_VCD
#include "verilated_vcd_c.h"
using TraceFile = VerilatedVcdC;
#endif

namespace {

constexpr uint32_t MAX_READS = 64;
constexpr uint32_t MAX_WRITES = 16;
constexpr uint64_t NONE = ~uint64_t(0);
constexpr int N_SLOTS = CFG_LD_QUEUE + CFG_EX_QUEUE + CFG_ST_QUEUE;
const char* const HW_FIELDS[] = {"dim", "sp_kib", "sp_banks", "acc_kib", "acc_banks", "dma_beat_bytes",
                                 "max_block_len", "dram_latency", "ld_queue", "ex_queue", "st_queue"};
const uint32_t HW_VALUES[] = {CFG_DIM, CFG_SP_KIB, CFG_SP_BANKS, CFG_ACC_KIB, CFG_ACC_BANKS, CFG_DMA_BEAT_BYTES,
                              CFG_MAX_BLOCK_LEN, CFG_DRAM_LATENCY, CFG_LD_QUEUE, CFG_EX_QUEUE, CFG_ST_QUEUE};

[[noreturn]] void fail(int code, const std::string& msg) {
    std::fprintf(stderr, "error: %s\n", msg.c_str());
    std::exit(code);
}

// ---- bit access on Verilator port types (integers or VlWide) -------------------
template <class T> inline uint32_t get32(const T& v, int word) { return uint32_t(uint64_t(v) >> (32 * word)); }
template <std::size_t W> inline uint32_t get32(const VlWide<W>& v, int word) { return v[word]; }
template <class T> inline uint64_t get64(const T& v, int word) {
    return uint64_t(get32(v, 2 * word)) | uint64_t(get32(v, 2 * word + 1)) << 32;
}
template <class T> inline bool getbit(const T& v, int i) {
    return (get32(v, i / 32) >> (i % 32)) & 1u;
}
template <class T> inline uint32_t getbits(const T& v, int lo, int width) {
    uint32_t r = 0;
    for (int i = 0; i < width; ++i) r |= uint32_t(getbit(v, lo + i)) << i;
    return r;
}
template <class T> inline void set_bytes(T& v, const uint8_t* src, size_t n) {
    uint64_t x = 0;
    for (size_t i = 0; i < n && i < sizeof(T); ++i) x |= uint64_t(src[i]) << (8 * i);
    v = T(x);
}
template <std::size_t W> inline void set_bytes(VlWide<W>& v, const uint8_t* src, size_t n) {
    for (std::size_t w = 0; w < W; ++w) v[w] = 0;
    for (size_t i = 0; i < n && i < W * 4; ++i) v[i / 4] |= uint32_t(src[i]) << (8 * (i % 4));
}
template <class T> inline void get_bytes(const T& v, uint8_t* dst, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = uint8_t(get32(v, int(i / 4)) >> (8 * (i % 4)));
}

// ---- program file -----------------------------------------------------------------
struct Reader {
    const std::vector<uint8_t>& d;
    size_t pos = 0;
    const uint8_t* take(size_t n) {
        if (pos + n > d.size()) fail(2, "program file truncated");
        const uint8_t* p = d.data() + pos;
        pos += n;
        return p;
    }
    template <class T> T get() {
        T v;
        std::memcpy(&v, take(sizeof(T)), sizeof(T));
        return v;
    }
};

struct Instr { uint64_t funct, rs1, rs2; };
struct Segment { uint64_t addr, len; };

struct Program {
    std::vector<Instr> instrs;
    std::vector<uint8_t> dram;
    std::vector<Segment> outputs;
};

Program load_program(const char* path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) fail(2, std::string("cannot open program file ") + path);
    std::vector<uint8_t> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    Reader r{data};
    if (data.size() < 8 || std::memcmp(r.take(8), "SYSTOLIC", 8) != 0) fail(2, "not a program file (bad magic)");
    uint32_t version = r.get<uint32_t>();
    if (version != 1) fail(2, "program file format version " + std::to_string(version) + ", harness reads 1");
    uint32_t n_hw = r.get<uint32_t>();
    if (n_hw != 11) fail(2, "program file has " + std::to_string(n_hw) + " hardware fields, expected 11");
    for (uint32_t i = 0; i < n_hw; ++i) {
        uint32_t v = r.get<uint32_t>();
        if (v != HW_VALUES[i])
            fail(2, std::string("program targets ") + HW_FIELDS[i] + "=" + std::to_string(v) +
                        " but this model was built with " + std::to_string(HW_VALUES[i]));
    }
    uint16_t name_len = r.get<uint16_t>();
    r.take(name_len);
    uint32_t n_buf = r.get<uint32_t>();
    for (uint32_t i = 0; i < n_buf; ++i) {
        uint16_t nl = r.get<uint16_t>();
        r.take(nl);
        r.take(2);
        uint8_t ndim = r.get<uint8_t>();
        r.take(8 * size_t(ndim) + 8);
    }
    Program p;
    uint64_t dram_size = r.get<uint64_t>();
    if (dram_size > (uint64_t(1) << 36)) fail(2, "DRAM size too large");
    p.dram.assign(dram_size + 64, 0);  // slack for beat-aligned reads at the end
    uint64_t n_instr = r.get<uint64_t>();
    if (n_instr > (data.size() / 24)) fail(2, "program file truncated (instructions)");
    p.instrs.resize(n_instr);
    for (auto& in : p.instrs) {
        in.funct = r.get<uint64_t>();
        in.rs1 = r.get<uint64_t>();
        in.rs2 = r.get<uint64_t>();
    }
    uint32_t n_seg = r.get<uint32_t>();
    for (uint32_t i = 0; i < n_seg; ++i) {
        uint64_t addr = r.get<uint64_t>(), len = r.get<uint64_t>();
        if (addr + len > dram_size) fail(2, "DRAM image segment past the end of DRAM");
        std::memcpy(p.dram.data() + addr, r.take(len), len);
    }
    uint32_t n_out = r.get<uint32_t>();
    for (uint32_t i = 0; i < n_out; ++i) {
        uint64_t addr = r.get<uint64_t>(), len = r.get<uint64_t>();
        if (addr + len > dram_size) fail(2, "output segment past the end of DRAM");
        p.outputs.push_back({addr, len});
    }
    if (r.pos != data.size()) fail(2, "program file has trailing bytes");
    return p;
}

std::string op_name(const Instr& in) {
    if (in.funct == FUNCT_CONFIG && (in.rs1 & 3) < 3) return CONFIG_NAMES[in.rs1 & 3];
    for (const FunctName& f : FUNCT_NAMES) {
        if (f.funct == in.funct) return f.name;
    }
    return "funct" + std::to_string(in.funct);
}

// ---- DRAM ------------------------------------------------------------------------------
struct Xfer {
    bool read;
    uint64_t ready;
    uint32_t beats;
    uint32_t tag;
    uint64_t addr;
    uint32_t len;
};
struct Resp { uint64_t avail; uint32_t tag; uint64_t addr; uint32_t len; };
struct Ack { uint64_t avail; uint32_t tag; };

uint32_t beats_of(uint64_t addr, uint32_t len) {
    const uint64_t b = CFG_DMA_BEAT_BYTES;
    return uint32_t((addr + len + b - 1) / b - addr / b);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) fail(2, "usage: Vsim PROGRAM RESULTS [--log] [--trace-fst FILE] [--cycle-limit N] [--watchdog N]");
    const char* prog_path = argv[1];
    const char* res_path = argv[2];
    bool want_log = false, drop_responses = false;
    const char* wave = nullptr;
    uint64_t cycle_limit = 0, watchdog = 100000;
    for (int i = 3; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--log") want_log = true;
        else if (a == "--drop-dma-responses") drop_responses = true;
        else if ((a == "--trace-fst" || a == "--trace-vcd") && i + 1 < argc) wave = argv[++i];
        else if (a == "--cycle-limit" && i + 1 < argc) cycle_limit = std::strtoull(argv[++i], nullptr, 10);
        else if (a == "--watchdog" && i + 1 < argc) watchdog = std::strtoull(argv[++i], nullptr, 10);
        else fail(2, "unknown argument " + a);
    }
    Program prog = load_program(prog_path);
    const uint64_t n_instr = prog.instrs.size();

    auto ctx = std::make_unique<VerilatedContext>();
    ctx->randReset(0);  // memories and registers start at zero, as the functional model's
    auto top = std::make_unique<Vaccel_top>(ctx.get());
#if VM_TRACE_FST || VM_TRACE_VCD
    std::unique_ptr<TraceFile> tfp;
    if (wave) {
        ctx->traceEverOn(true);
        tfp = std::make_unique<TraceFile>();
        top->trace(tfp.get(), 99);
        tfp->open(wave);
    }
#else
    if (wave) fail(2, "this model was built without waveform support");
#endif
    uint64_t time_ps = 0;
    auto dump = [&]() {
#if VM_TRACE_FST || VM_TRACE_VCD
        if (tfp) tfp->dump(time_ps);
#endif
        time_ps += 5;
    };

    // reset
    top->clk_i = 0;
    top->rst_ni = 0;
    top->cmd_valid_i = 0;
    top->dma_rd_req_ready_i = 0;
    top->dma_rd_resp_valid_i = 0;
    top->dma_wr_req_ready_i = 0;
    top->dma_wr_ack_valid_i = 0;
    for (int i = 0; i < 2; ++i) {
        top->clk_i = 0; top->eval(); dump();
        top->clk_i = 1; top->eval(); dump();
    }
    top->rst_ni = 1;

    std::vector<uint64_t> t_disp, t_issue, t_done;
    std::vector<uint8_t> unit;
    if (want_log) {
        t_disp.assign(n_instr, NONE);
        t_issue.assign(n_instr, NONE);
        t_done.assign(n_instr, NONE);
        unit.assign(n_instr, 3);
    }

    std::deque<Xfer> xfers;
    std::deque<Resp> resps;
    std::deque<Ack> acks;
    uint32_t reads_in_flight = 0, writes_in_flight = 0;
    uint64_t pc = 0, cycle = 0, last_progress = 0, presented_resp = NONE, resp_id = 0;
    std::vector<uint8_t> wbuf(CFG_DIM * 4);
    const auto t0 = std::chrono::steady_clock::now();

    for (;;) {
        // drive the inputs for this cycle
        const bool cmd_valid = pc < n_instr;
        top->cmd_valid_i = cmd_valid;
        if (cmd_valid) {
            top->cmd_funct_i = uint8_t(prog.instrs[pc].funct);
            top->cmd_rs1_i = prog.instrs[pc].rs1;
            top->cmd_rs2_i = prog.instrs[pc].rs2;
        }
        top->dma_rd_req_ready_i = reads_in_flight < MAX_READS;
        top->dma_wr_req_ready_i = writes_in_flight < MAX_WRITES;
        const bool resp_valid = !drop_responses && !resps.empty() && resps.front().avail <= cycle;
        top->dma_rd_resp_valid_i = resp_valid;
        if (resp_valid && presented_resp != resp_id) {
            const Resp& r = resps.front();
            top->dma_rd_resp_tag_i = r.tag;
            set_bytes(top->dma_rd_resp_data_i, prog.dram.data() + r.addr, r.len);
            presented_resp = resp_id;
        }
        const bool ack_valid = !acks.empty() && acks.front().avail <= cycle;
        top->dma_wr_ack_valid_i = ack_valid;
        if (ack_valid) top->dma_wr_ack_tag_i = acks.front().tag;

        top->clk_i = 0;
        top->eval();
        dump();

        // sample the handshakes of this edge
        const bool cmd_fire = cmd_valid && top->cmd_ready_o;
        const bool rd_fire = top->dma_rd_req_valid_o && top->dma_rd_req_ready_i;
        const bool resp_fire = resp_valid && top->dma_rd_resp_ready_o;
        const bool wr_fire = top->dma_wr_req_valid_o && top->dma_wr_req_ready_i;
        bool progress = cmd_fire || rd_fire || resp_fire || wr_fire || ack_valid;
        Xfer rd{}, wr{};
        if (rd_fire) {
            rd = {true, cycle + CFG_DRAM_LATENCY, 0, top->dma_rd_req_tag_o, top->dma_rd_req_addr_o,
                  top->dma_rd_req_len_o};
        }
        if (wr_fire) {
            wr = {false, cycle + 1, 0, top->dma_wr_req_tag_o, top->dma_wr_req_addr_o, top->dma_wr_req_len_o};
            get_bytes(top->dma_wr_req_data_o, wbuf.data(), wr.len);
        }
        const auto done_vec = top->ev_done_o;
        bool any_done = false;
        for (int s = 0; s < N_SLOTS; ++s) {
            if (getbit(done_vec, s)) { any_done = true; break; }
        }
        progress = progress || any_done;
        if (want_log) {
            if (top->ev_disp_valid_o) {
                uint32_t seq = top->ev_disp_seq_o;
                if (seq < n_instr) t_disp[seq] = cycle;
            }
            for (int q = 0; q < 3; ++q) {
                if ((top->ev_issue_o >> q) & 1) {
                    uint32_t seq = get32(top->ev_issue_seq_o, q);
                    if (seq < n_instr) { t_issue[seq] = cycle; unit[seq] = uint8_t(q); }
                }
            }
            if (any_done) {
                for (int s = 0; s < N_SLOTS; ++s) {
                    if (getbit(done_vec, s)) {
                        uint32_t seq = get32(top->ev_slot_seq_o, s);
                        if (seq < n_instr) t_done[seq] = cycle;
                    }
                }
            }
        }

        top->clk_i = 1;
        top->eval();
        dump();
        ++cycle;

        // the harness side of the edge
        if (cmd_fire) ++pc;
        if (resp_fire) { resps.pop_front(); --reads_in_flight; ++resp_id; }
        if (ack_valid) { acks.pop_front(); --writes_in_flight; }
        if (rd_fire) {
            if (rd.addr + rd.len > prog.dram.size() - 64) fail(2, "DMA read past the end of DRAM");
            rd.beats = beats_of(rd.addr, rd.len);
            xfers.push_back(rd);
            ++reads_in_flight;
        }
        if (wr_fire) {
            if (wr.addr + wr.len > prog.dram.size() - 64) fail(2, "DMA write past the end of DRAM");
            std::memcpy(prog.dram.data() + wr.addr, wbuf.data(), wr.len);
            wr.beats = beats_of(wr.addr, wr.len);
            xfers.push_back(wr);
            ++writes_in_flight;
        }
        // the memory port moves one beat of the oldest ready transfer
        for (auto it = xfers.begin(); it != xfers.end(); ++it) {
            if (it->ready <= cycle) {
                progress = true;
                if (--it->beats == 0) {
                    if (it->read) resps.push_back({cycle + 1, it->tag, it->addr, it->len});
                    else acks.push_back({cycle + 1, it->tag});
                    xfers.erase(it);
                }
                break;
            }
        }

        if (progress) last_progress = cycle;
        if (pc == n_instr && top->idle_o && xfers.empty() && resps.empty() && acks.empty()) break;
        if (cycle_limit && cycle >= cycle_limit) {
            fail(4, "cycle limit of " + std::to_string(cycle_limit) + " cycles reached with " +
                        std::to_string(n_instr - pc) + " of " + std::to_string(n_instr) +
                        " instructions not yet dispatched");
        }
        if (cycle - last_progress > watchdog) {
            std::ostringstream m;
            m << "watchdog: no progress for " << watchdog << " cycles (at cycle " << cycle << "); ";
            if (pc < n_instr) {
                m << "dispatch holds instr #" << pc << " (" << op_name(prog.instrs[pc]) << ")";
                m << (top->dbg_fence_o ? ", a fence waiting for all earlier instructions" : ", its queue is full");
                m << "; ";
            } else {
                m << "all instructions dispatched; ";
            }
            const char* qn[3] = {"load", "execute", "store"};
            for (int q = 0; q < 3; ++q) {
                uint32_t waiting = getbits(top->dbg_waiting_o, q * (CFG_SLOT_W + 1), CFG_SLOT_W + 1);
                m << qn[q] << " unit: ";
                if (waiting == 0) {
                    m << "nothing waiting to issue";
                } else {
                    int cand = int(getbits(top->dbg_cand_slot_o, q * CFG_SLOT_W, CFG_SLOT_W));
                    uint32_t seq = get32(top->ev_slot_seq_o, cand);
                    m << "instr #" << seq << " (" << (seq < n_instr ? op_name(prog.instrs[seq]) : "?") << ") waits";
                    bool dep = false;
                    for (int s = 0; s < N_SLOTS; ++s) {
                        if (getbit(top->dbg_cand_deps_o, q * N_SLOTS + s)) {
                            uint32_t ds = get32(top->ev_slot_seq_o, s);
                            m << (dep ? ", " : " on a hazard with ") << "instr #" << ds << " ("
                              << (ds < n_instr ? op_name(prog.instrs[ds]) : "?") << ", "
                              << (getbit(top->dbg_issued_o, s) ? "issued, not complete" : "not issued") << ")";
                            dep = true;
                        }
                    }
                    if (!dep) m << (((top->dbg_unit_ready_o >> q) & 1) ? "" : " for the unit to accept it");
                }
                m << "; ";
            }
            m << "load unit has " << top->dbg_ld_outstanding_o << " DMA reads outstanding"
              << (drop_responses ? " (responses are being dropped: --drop-dma-responses)" : "")
              << "; store unit has " << top->dbg_st_outstanding_o << " DMA writes unacknowledged"
              << "; execute state bits " << int(top->dbg_ex_state_o)
              << " (S streaming, W waits for a weight buffer, W loading, W waits for S)"
              << "; DRAM port has " << xfers.size() << " transfers, " << resps.size() << " responses queued";
            fail(3, m.str());
        }
    }
    const auto t1 = std::chrono::steady_clock::now();
    const uint64_t sim_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
#if VM_TRACE_FST || VM_TRACE_VCD
    if (tfp) tfp->close();
#endif

    // the RTL counts its own cycles: a counter that disagrees with the clock is a bug
    const uint64_t rtl_cycles = get64(top->ctr_o, CTR_CYCLES);
    if (rtl_cycles != cycle)
        fail(5, "the RTL's cycle counter reads " + std::to_string(rtl_cycles) + " but the harness ran " +
                    std::to_string(cycle) + " cycles");

    // results file
    std::ofstream out(res_path, std::ios::binary);
    if (!out) fail(2, std::string("cannot write results file ") + res_path);
    auto put = [&](const void* p, size_t n) { out.write(static_cast<const char*>(p), std::streamsize(n)); };
    auto put64 = [&](uint64_t v) { put(&v, 8); };
    auto put32 = [&](uint32_t v) { put(&v, 4); };
    put("SYSRES01", 8);
    put64(cycle);
    put64(sim_ns);
    put32(uint32_t(N_COUNTERS));
    for (int i = 0; i < N_COUNTERS; ++i) {
        uint16_t n = uint16_t(std::strlen(COUNTER_NAMES[i]));
        put(&n, 2);
        put(COUNTER_NAMES[i], n);
        put64(get64(top->ctr_o, i));
    }
    put32(uint32_t(prog.outputs.size()));
    for (const auto& s : prog.outputs) {
        put64(s.addr);
        put64(s.len);
        put(prog.dram.data() + s.addr, s.len);
    }
    put32(want_log ? uint32_t(n_instr) : 0u);
    if (want_log) {
        for (uint64_t i = 0; i < n_instr; ++i) {
            put64(t_disp[i]);
            put64(t_issue[i]);
            put64(t_done[i]);
            put(&unit[i], 1);
        }
    }
    out.close();
    top->final();
    return 0;
}
