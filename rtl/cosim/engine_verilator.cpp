// The Verilated RTL as the engine: words queue up and the clock runs only when the program
// waits (a fence, a counter or clock read, its exit) or the queue is long. The clock never runs
// while the queue is empty short of a wait, so the accelerator sees the words exactly as the
// harness would feed a program file holding them: the same cycles, to the cycle. A failed RTL
// assertion stops the program as any failure of the simulation does (the harness's process
// dies of it instead, and its caller says so).
#include <chrono>
#include <memory>
#include <string>

#include "engine.h"
#include "machine.h"
#include "systolic_isa.h"

namespace cosim {
namespace {

constexpr size_t QUEUE_HIGH = 1 << 16;   // words waiting: past this, clock down to QUEUE_LOW
constexpr size_t QUEUE_LOW = 1 << 12;

class VerilatorEngine : public Engine {
  public:
    explicit VerilatorEngine(ProcessMemory& memory)
        : machine_(memory, "", harness::Limits{0, systolic_cosim_watchdog, false},
                   harness::Soc::from_fields(systolic_cosim_hw_fields)) {
        // the model's context (its constructor made it this thread's): an assertion's $stop then
        // marks it instead of exiting, so that clock() can report it
        Verilated::threadContextp()->fatalOnError(false);
    }

    const char* name() const override { return "verilator"; }
    bool timed() const override { return true; }

    void issue(const harness::Instr& in) override {
        machine_.instrs().push_back(in);
        if (waiting() > QUEUE_HIGH) {
            clock([&] { return waiting() <= QUEUE_LOW; });
            machine_.forget_dispatched();   // keep only the words still waiting
        }
    }
    void dispatch_all() override {
        if (waiting()) clock([&] { return waiting() == 0; });
        machine_.forget_dispatched();
    }
    // A fence word: dispatch takes it once every earlier instruction is done.
    void fence() override {
        machine_.instrs().push_back({FUNCT_FENCE, 0, 0});
        dispatch_all();
    }
    void finish() override {
        if (!machine_.done()) clock([&] { return machine_.done(); });
        machine_.check_cycle_counter();
    }
    uint64_t cycles() const override { return machine_.cycles(); }
    uint64_t counter(int index) const override { return harness::get64(machine_.top().ctr_o, index); }
    uint64_t rs_count(int q) const override {
        return harness::getbits(machine_.top().rs_count_o, q * (CFG_SLOT_W + 1), CFG_SLOT_W + 1);
    }
    uint64_t soc_counter(int index) const override { return machine_.soc_counter(index); }
    double clock_seconds() const override { return clock_s_; }

  private:
    // run_until, timed: the harness reports its clock loop's time too, so the two compare
    template <class Until> void clock(Until until) {
        const auto t0 = std::chrono::steady_clock::now();
        VerilatedContext& ctx = *Verilated::threadContextp();
        machine_.run_until([&] { return ctx.gotError() || until(); });
        clock_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (ctx.gotError()) {
            throw harness::Failure{5, "an RTL assertion failed at cycle " + std::to_string(machine_.cycles()) +
                                          " (Verilator's %Error lines on stdout name it)"};
        }
    }

    size_t waiting() { return machine_.instrs().size() - machine_.dispatched(); }

    harness::Machine<ProcessMemory> machine_;
    double clock_s_ = 0;
};

}  // namespace

std::unique_ptr<Engine> make_engine(ProcessMemory& memory, WordCheck&) {
    return std::make_unique<VerilatorEngine>(memory);
}

}  // namespace cosim
