// Harness of the Verilated accelerator: reads a program file, models DRAM behind
// the DMA ports, feeds the instructions, runs to completion and writes a results
// file (cycles, counters, output DRAM segments, optional per-instruction log).
//
//   Vsim PROGRAM RESULTS [--log] [--trace-fst FILE | --trace-vcd FILE] [--cycle-limit N]
//                        [--watchdog N] [--drop-dma-responses]
//   Vsim --batch
// (a waveform needs a model built with Verilator's --trace-fst or --trace)
//
// --batch runs many programs in one process, so that small programs do not pay a
// process start each: every line on stdin is one run's arguments (PROGRAM, RESULTS
// and options as above), separated by tabs; for each, one line goes to stdout:
// "ok", or "error CODE MESSAGE" with the exit status a single run would have had.
// Each run gets a freshly constructed model (registers and memories zeroed) and a
// fresh DRAM, so nothing of one program reaches the next. EOF ends the process.
//
// The DRAM model is the class Dram below; the README ("The DRAM model") documents its
// latency, beats, requests in flight and when reads and writes take effect.
//
// Exit status: 0 done, 2 bad arguments or program file, 3 watchdog (no progress),
// 4 cycle limit reached, 5 the RTL's cycle counter disagrees with the harness's count.
// Errors go to stderr, one paragraph (in --batch mode, to the program's status line).
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>
#ifdef __linux__
#include <csignal>
#include <sys/prctl.h>
#endif

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

constexpr uint64_t NONE = ~uint64_t(0);
constexpr uint64_t DRAM_SLACK = 64;   // zero bytes past the end, for beat-aligned reads
constexpr int N_SLOTS = CFG_LD_QUEUE + CFG_EX_QUEUE + CFG_ST_QUEUE;
// the program file's hardware fields (N_HW_FIELDS, HW_FIELDS, HW_VALUES) are in systolic_cfg.h

// A run that cannot go on: the exit status and the message. Thrown, so that --batch
// can report it and go on with the next program.
struct Failure {
    int code;
    std::string msg;
};

[[noreturn]] void fail(int code, const std::string& msg) { throw Failure{code, msg}; }

// ---- bit access on Verilator port types (integers or VlWide) -------------------
template <class T> inline uint32_t get32(const T& v, int word) {
    return uint32_t(uint64_t(v) >> (32 * word));
}
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

Program load_program(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) fail(2, std::string("cannot open program file ") + path);
    std::vector<uint8_t> data((std::istreambuf_iterator<char>(f)),
                              std::istreambuf_iterator<char>());
    Reader r{data};
    if (data.size() < 8 || std::memcmp(r.take(8), "SYSTOLIC", 8) != 0)
        fail(2, "not a program file (bad magic)");
    uint32_t version = r.get<uint32_t>();
    if (version != 1)
        fail(2, "program file format version " + std::to_string(version) + ", harness reads 1");
    uint32_t n_hw = r.get<uint32_t>();
    if (n_hw != N_HW_FIELDS)
        fail(2, "program file has " + std::to_string(n_hw) + " hardware fields, expected " +
                    std::to_string(N_HW_FIELDS));
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
    p.dram.assign(dram_size + DRAM_SLACK, 0);
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
// The DRAM behind the accelerator's DMA ports (see the README, "The DRAM model"):
// one memory port that moves CFG_DMA_BEAT_BYTES a cycle. Each cycle drive() sets the
// ready, response and acknowledgement inputs; sample() reads the handshakes before the
// clock edge, commit() applies them after it and moves one beat.
class Dram {
  public:
    static constexpr uint32_t MAX_READS = CFG_DMA_INFLIGHT;    // accepted, not yet answered
    static constexpr uint32_t MAX_WRITES = CFG_DMA_INFLIGHT;   // accepted, not yet acknowledged

    Dram(std::vector<uint8_t>& mem, bool drop_responses) : mem_(mem), drop_(drop_responses) {}

    void drive(Vaccel_top& top, uint64_t cycle) {
        top.dma_rd_req_ready_i = reads_ < MAX_READS;
        top.dma_wr_req_ready_i = writes_ < MAX_WRITES;
        resp_valid_ = !drop_ && !resps_.empty() && resps_.front().avail <= cycle;
        top.dma_rd_resp_valid_i = resp_valid_;
        if (resp_valid_ && presented_ != resp_id_) {
            // the row is read from DRAM when its response is first presented
            const Resp& r = resps_.front();
            top.dma_rd_resp_tag_i = r.tag;
            set_bytes(top.dma_rd_resp_data_i, mem_.data() + r.addr, r.len);
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
            rd_ = {true, cycle + CFG_DRAM_LATENCY, 0, top.dma_rd_req_tag_o, top.dma_rd_req_addr_o,
                   top.dma_rd_req_len_o};
        }
        if (wr_fire_) {
            wr_ = {false, cycle + 1, 0, top.dma_wr_req_tag_o, top.dma_wr_req_addr_o,
                   top.dma_wr_req_len_o};
            wdata_.resize(wr_.len);
            get_bytes(top.dma_wr_req_data_o, wdata_.data(), wr_.len);
        }
        return rd_fire_ || wr_fire_ || resp_fire_ || ack_valid_;
    }

    // After the edge at `cycle`: retire what was taken, accept the new requests and
    // move one beat of the oldest ready transfer; returns whether the port moved.
    bool commit(uint64_t cycle) {
        if (resp_fire_) { resps_.pop_front(); --reads_; ++resp_id_; }
        if (ack_valid_) { acks_.pop_front(); --writes_; }
        if (rd_fire_) {
            accept(rd_, "read");
            ++reads_;
        }
        if (wr_fire_) {
            accept(wr_, "write");
            std::memcpy(mem_.data() + wr_.addr, wdata_.data(), wr_.len);   // visible at once
            ++writes_;
        }
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

    bool idle() const { return xfers_.empty() && resps_.empty() && acks_.empty(); }
    bool dropping() const { return drop_; }
    size_t transfers() const { return xfers_.size(); }
    size_t responses() const { return resps_.size(); }

  private:
    struct Xfer { bool read; uint64_t ready; uint32_t beats, tag; uint64_t addr; uint32_t len; };
    struct Resp { uint64_t avail; uint32_t tag; uint64_t addr; uint32_t len; };
    struct Ack { uint64_t avail; uint32_t tag; };

    static uint32_t beats_of(uint64_t addr, uint32_t len) {
        const uint64_t b = CFG_DMA_BEAT_BYTES;
        return uint32_t((addr + len + b - 1) / b - addr / b);
    }
    void accept(Xfer& x, const char* what) {
        if (x.addr + x.len > mem_.size() - DRAM_SLACK)
            fail(2, std::string("DMA ") + what + " past the end of DRAM");
        x.beats = beats_of(x.addr, x.len);   // the beat-aligned span of its bytes
        xfers_.push_back(x);
    }

    std::vector<uint8_t>& mem_;
    const bool drop_;
    std::deque<Xfer> xfers_;   // accepted, moving through the port in order
    std::deque<Resp> resps_;   // read rows waiting to go back, in order
    std::deque<Ack> acks_;
    uint32_t reads_ = 0, writes_ = 0;
    uint64_t presented_ = NONE, resp_id_ = 0;
    bool resp_valid_ = false, ack_valid_ = false, rd_fire_ = false, wr_fire_ = false;
    bool resp_fire_ = false;
    Xfer rd_{}, wr_{};
    std::vector<uint8_t> wdata_;
};

// ---- per-instruction log: dispatch, issue and completion cycles ------------------------
class InstrLog {
  public:
    explicit InstrLog(uint64_t n) : disp_(n, NONE), issue_(n, NONE), done_(n, NONE), unit_(n, 3) {}

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

    template <class Put> void write(Put put) const {
        for (size_t i = 0; i < disp_.size(); ++i) {
            put(&disp_[i], 8);
            put(&issue_[i], 8);
            put(&done_[i], 8);
            put(&unit_[i], 1);
        }
    }

  private:
    std::vector<uint64_t> disp_, issue_, done_;
    std::vector<uint8_t> unit_;
};

bool any_done(const Vaccel_top& top) {
    for (int s = 0; s < N_SLOTS; ++s) {
        if (getbit(top.ev_done_o, s)) return true;
    }
    return false;
}

// What each unit waits on, for the watchdog's error message.
std::string stall_report(const Vaccel_top& top, const Program& prog, uint64_t pc,
                         const Dram& dram) {
    const uint64_t n_instr = prog.instrs.size();
    auto name = [&](uint32_t seq) { return seq < n_instr ? op_name(prog.instrs[seq]) : "?"; };
    std::ostringstream m;
    if (pc < n_instr) {
        m << "dispatch holds instr #" << pc << " (" << op_name(prog.instrs[pc]) << ")"
          << (top.dbg_fence_o ? ", a fence waiting for all earlier instructions"
                              : ", its queue is full")
          << "; ";
    } else {
        m << "all instructions dispatched; ";
    }
    const char* qn[3] = {"load", "execute", "store"};
    for (int q = 0; q < 3; ++q) {
        const uint32_t waiting = getbits(top.dbg_waiting_o, q * (CFG_SLOT_W + 1), CFG_SLOT_W + 1);
        m << qn[q] << " unit: ";
        if (waiting == 0) {
            m << "nothing waiting to issue; ";
            continue;
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
    m << "load unit has " << top.dbg_ld_outstanding_o << " DMA reads outstanding"
      << (dram.dropping() ? " (responses are being dropped: --drop-dma-responses)" : "")
      << "; store unit has " << top.dbg_st_outstanding_o << " DMA writes unacknowledged"
      << "; execute state bits " << int(top.dbg_ex_state_o)
      << " (S streaming, W waits for a weight buffer, W loading, W waits for S)"
      << "; DRAM port has " << dram.transfers() << " transfers, " << dram.responses()
      << " responses queued";
    return m.str();
}

// ---- the Verilated model, its clock and its waveform ------------------------------------
class Model {
  public:
    explicit Model(const std::string& wave) : ctx_(std::make_unique<VerilatedContext>()) {
        ctx_->randReset(0);   // memories and registers start at zero, as the functional model's
        top_ = std::make_unique<Vaccel_top>(ctx_.get());
#if VM_TRACE_FST || VM_TRACE_VCD
        if (!wave.empty()) {
            ctx_->traceEverOn(true);
            trace_ = std::make_unique<TraceFile>();
            top_->trace(trace_.get(), 99);
            trace_->open(wave.c_str());
        }
#else
        if (!wave.empty()) fail(2, "this model was built without waveform support");
#endif
    }
    ~Model() {
#if VM_TRACE_FST || VM_TRACE_VCD
        if (trace_) trace_->close();
#endif
        top_->final();
    }
    Vaccel_top& top() { return *top_; }

    // two cycles with every input idle and rst_ni low
    void reset() {
        Vaccel_top& t = *top_;
        t.rst_ni = 0;
        t.cmd_valid_i = 0;
        t.dma_rd_req_ready_i = 0;
        t.dma_rd_resp_valid_i = 0;
        t.dma_wr_req_ready_i = 0;
        t.dma_wr_ack_valid_i = 0;
        for (int i = 0; i < 2; ++i) {
            falling();
            rising();
        }
        t.rst_ni = 1;
    }
    void falling() { set_clock(0); }   // outputs of this cycle settle: sample them after
    void rising() { set_clock(1); }    // the edge: registers take their next state

  private:
    void set_clock(int v) {
        top_->clk_i = v;
        top_->eval();
#if VM_TRACE_FST || VM_TRACE_VCD
        if (trace_) trace_->dump(time_ps_);
#endif
        time_ps_ += 5;
    }
    std::unique_ptr<VerilatedContext> ctx_;
    std::unique_ptr<Vaccel_top> top_;
#if VM_TRACE_FST || VM_TRACE_VCD
    std::unique_ptr<TraceFile> trace_;
#endif
    uint64_t time_ps_ = 0;
};

struct Options {
    std::string program, results, wave;
    bool log = false, drop_responses = false;
    uint64_t cycle_limit = 0, watchdog = 100000;
};

uint64_t to_u64(const std::string& s) { return std::strtoull(s.c_str(), nullptr, 10); }

Options parse_args(const std::vector<std::string>& args) {
    if (args.size() < 2) {
        fail(2, "usage: Vsim PROGRAM RESULTS [--log] [--trace-fst FILE] [--cycle-limit N] "
                "[--watchdog N], or Vsim --batch");
    }
    Options o;
    o.program = args[0];
    o.results = args[1];
    for (size_t i = 2; i < args.size(); ++i) {
        const std::string& a = args[i];
        const bool has_value = i + 1 < args.size();
        if (a == "--log") o.log = true;
        else if (a == "--drop-dma-responses") o.drop_responses = true;
        else if ((a == "--trace-fst" || a == "--trace-vcd") && has_value) o.wave = args[++i];
        else if (a == "--cycle-limit" && has_value) o.cycle_limit = to_u64(args[++i]);
        else if (a == "--watchdog" && has_value) o.watchdog = to_u64(args[++i]);
        else fail(2, "unknown argument " + a);
    }
    return o;
}

void write_results(const std::string& path, const Vaccel_top& top, const Program& prog,
                   uint64_t cycles, uint64_t sim_ns, const InstrLog* log) {
    std::ofstream out(path, std::ios::binary);
    if (!out) fail(2, "cannot write results file " + path);
    auto put = [&](const void* p, size_t n) {
        out.write(static_cast<const char*>(p), std::streamsize(n));
    };
    auto put64 = [&](uint64_t v) { put(&v, 8); };
    auto put32 = [&](uint32_t v) { put(&v, 4); };
    put("SYSRES01", 8);
    put64(cycles);
    put64(sim_ns);
    put32(uint32_t(N_COUNTERS));
    for (int i = 0; i < N_COUNTERS; ++i) {
        const uint16_t n = uint16_t(std::strlen(COUNTER_NAMES[i]));
        put(&n, 2);
        put(COUNTER_NAMES[i], n);
        put64(get64(top.ctr_o, i));
    }
    put32(uint32_t(prog.outputs.size()));
    for (const auto& s : prog.outputs) {
        put64(s.addr);
        put64(s.len);
        put(prog.dram.data() + s.addr, s.len);
    }
    put32(log ? uint32_t(prog.instrs.size()) : 0u);
    if (log) log->write(put);
}

// One program from its file to its results file; throws Failure.
void run_program(const Options& opt) {
    Program prog = load_program(opt.program);
    const uint64_t n_instr = prog.instrs.size();
    Model model(opt.wave);
    Vaccel_top& top = model.top();
    Dram dram(prog.dram, opt.drop_responses);
    std::unique_ptr<InstrLog> log;
    if (opt.log) log = std::make_unique<InstrLog>(n_instr);

    model.reset();
    uint64_t pc = 0, cycle = 0, last_progress = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
        const bool cmd_valid = pc < n_instr;
        top.cmd_valid_i = cmd_valid;
        if (cmd_valid) {
            top.cmd_funct_i = uint8_t(prog.instrs[pc].funct);
            top.cmd_rs1_i = prog.instrs[pc].rs1;
            top.cmd_rs2_i = prog.instrs[pc].rs2;
        }
        dram.drive(top, cycle);
        model.falling();
        const bool cmd_fire = cmd_valid && top.cmd_ready_o;
        bool progress = dram.sample(top, cycle) | cmd_fire | any_done(top);
        if (log) log->record(top, cycle);
        model.rising();
        ++cycle;
        if (cmd_fire) ++pc;
        progress |= dram.commit(cycle);

        if (progress) last_progress = cycle;
        if (pc == n_instr && top.idle_o && dram.idle()) break;
        if (opt.cycle_limit && cycle >= opt.cycle_limit) {
            fail(4, "cycle limit of " + std::to_string(opt.cycle_limit) + " cycles reached with " +
                        std::to_string(n_instr - pc) + " of " + std::to_string(n_instr) +
                        " instructions not yet dispatched");
        }
        if (cycle - last_progress > opt.watchdog) {
            fail(3, "watchdog: no progress for " + std::to_string(opt.watchdog) +
                        " cycles (at cycle " + std::to_string(cycle) + "); " +
                        stall_report(top, prog, pc, dram));
        }
    }
    const auto t1 = std::chrono::steady_clock::now();
    const uint64_t sim_ns =
        uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());

    // the RTL counts its own cycles: a counter that disagrees with the clock is a bug
    const uint64_t rtl_cycles = get64(top.ctr_o, CTR_CYCLES);
    if (rtl_cycles != cycle) {
        fail(5, "the RTL's cycle counter reads " + std::to_string(rtl_cycles) +
                    " but the harness ran " + std::to_string(cycle) + " cycles");
    }
    write_results(opt.results, top, prog, cycle, sim_ns, log.get());
}

std::vector<std::string> split_tabs(const std::string& line) {
    std::vector<std::string> out;
    std::string::size_type start = 0, tab;
    while ((tab = line.find('\t', start)) != std::string::npos) {
        out.push_back(line.substr(start, tab - start));
        start = tab + 1;
    }
    out.push_back(line.substr(start));
    return out;
}

// --batch: one run per line of stdin, one status line per run on stdout. The status
// lines get stdout to themselves: what the model prints ($error of an assertion,
// Verilator's messages) goes to stderr.
int run_batch() {
    std::FILE* status = fdopen(dup(STDOUT_FILENO), "w");
    if (!status || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        std::fprintf(stderr, "error: cannot set up the status channel\n");
        return 2;
    }
    std::string line;
    while (std::getline(std::cin, line)) {
        try {
            run_program(parse_args(split_tabs(line)));
            std::fputs("ok\n", status);
        } catch (const Failure& f) {
            std::string msg = f.msg;
            for (char& c : msg) {
                if (c == '\n') c = ' ';
            }
            std::fprintf(status, "error %d %s\n", f.code, msg.c_str());
        }
        std::fflush(status);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef __linux__
    // die with the process that started us: a killed tuning worker leaves no simulation running
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    if (argc == 2 && std::string(argv[1]) == "--batch") return run_batch();
    try {
        run_program(parse_args(std::vector<std::string>(argv + 1, argv + argc)));
    } catch (const Failure& f) {
        std::fprintf(stderr, "error: %s\n", f.msg.c_str());
        return f.code;
    }
    return 0;
}

