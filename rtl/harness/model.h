// The Verilated model, its clock and its waveform (a model built with Verilator's
// --trace-fst or --trace can write one).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "Vaccel_top.h"
#include "Vaccel_top___024root.h"
#include "failure.h"
#include "verilated.h"
#if VM_TRACE_FST
#include "verilated_fst_c.h"
#elif VM_TRACE_VCD
#include "verilated_vcd_c.h"
#endif

// Verilator's evaluation of the model's state (generated into Vaccel_top___024root__*.cpp), which
// Vaccel_top::eval() calls after its own bookkeeping (Model::set_clock below).
void Vaccel_top___024root___eval(Vaccel_top___024root* vlSelf);

namespace harness {

#if VM_TRACE_FST
using TraceFile = VerilatedFstC;
#elif VM_TRACE_VCD
using TraceFile = VerilatedVcdC;
#endif

class Model {
  public:
    // wave: the waveform file to write, or empty for none
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
    // After the first, an edge evaluates the model's state only: Vaccel_top::eval() also empties
    // Verilator's deleter of class objects and its queue of messages from other threads, a mutex
    // each, twice a cycle, where a model without classes or threads leaves both empty (a message
    // posted on this thread, such as a failed assertion's stop, runs at once).
    void set_clock(int v) {
        top_->clk_i = v;
        if (bare_eval()) {
            Vaccel_top___024root___eval(top_->rootp);
        } else {
            top_->eval();   // the first (the initial blocks and the settle), or a traced edge
            started_ = true;
        }
#if VM_TRACE_FST || VM_TRACE_VCD
        if (trace_) trace_->dump(time_ps_);
#endif
        time_ps_ += 5;
    }
    // not while a waveform is written: eval() marks the activity without which its dump records
    // no change
    bool bare_eval() const {
#if VM_TRACE_FST || VM_TRACE_VCD
        if (trace_) return false;
#endif
        return started_;
    }
    std::unique_ptr<VerilatedContext> ctx_;
    std::unique_ptr<Vaccel_top> top_;
#if VM_TRACE_FST || VM_TRACE_VCD
    std::unique_ptr<TraceFile> trace_;
#endif
    uint64_t time_ps_ = 0;
    bool started_ = false;
};

}  // namespace harness
