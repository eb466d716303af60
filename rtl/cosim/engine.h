// What the runtime drives: the accelerator behind the words of one C program. An engine is the
// Verilated RTL (engine_verilator.cpp) or the functional model (engine_functional.cpp); a
// runtime library holds one of them, and make_engine() builds it. Every word reaches it checked
// (word_check.h): both engines run the same words and refuse the same ones.
#pragma once
#include <cstdint>
#include <memory>

#include "instr.h"
#include "process_memory.h"

namespace cosim {

// What `systolic cc` writes into each program it links (its hardware and where the toolkit is).
extern "C" const char systolic_cosim_hw_toml[];      // HardwareConfig.to_toml()
extern "C" const char systolic_cosim_pythonpath[];   // the functional engine's sys.path, ':'-separated
extern "C" const uint64_t systolic_cosim_watchdog;   // cycles without progress before a run stops
extern "C" const uint32_t systolic_cosim_hw_fields[];   // HardwareConfig.hardware_fields()

class WordCheck;   // word_check.h: what the runtime checks every word with, before the engine

class Engine {
  public:
    virtual ~Engine() = default;
    virtual const char* name() const = 0;
    virtual bool timed() const = 0;   // whether cycles() and counter() count anything
    // Throw harness::Failure when the accelerator cannot go on.
    virtual void issue(const harness::Instr& in) = 0;
    virtual void dispatch_all() = 0;   // until every issued word has entered the accelerator
    virtual void fence() = 0;          // until every issued word is done
    virtual void finish() = 0;         // at a clock read and at exit: until the accelerator is idle
    virtual uint64_t cycles() const = 0;
    virtual uint64_t counter(int index) const = 0;   // the counter COUNTER_NAMES[index]
    virtual uint64_t rs_count(int) const { return 0; }   // dispatch queue q's (0 LD, 1 EX, 2 ST) entries now
    virtual uint64_t soc_counter(int) const { return 0; }   // SOC_COUNTER_NAMES[index]: the SoC's
    virtual double clock_seconds() const = 0;         // wall time spent clocking the accelerator
};

// `words` has checked each word before the engine's issue() gets it (the functional engine runs
// the primitives it checked)
std::unique_ptr<Engine> make_engine(ProcessMemory& memory, WordCheck& words);

}  // namespace cosim
