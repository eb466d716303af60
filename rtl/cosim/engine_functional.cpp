// The functional model as the engine, through the embedded Python interpreter (embedded_python.h)
// that runs the toolkit's own model (simulators/cosim_functional.py over simulators/functional.py):
// one home for the semantics, so that what the model learns (a dataflow, the transposer, pooling)
// the C runtime has too. It executes each word as it arrives (the primitives the runtime's check
// expanded it to) and has no timing.
#include <memory>

#include "embedded_python.h"
#include "engine.h"
#include "word_check.h"

extern "C" const char* systolic_cosim_copy(uint64_t addr, uint64_t len, void* buf, int write);

namespace cosim {
namespace {

class FunctionalEngine : public Engine {
  public:
    explicit FunctionalEngine(WordCheck& words)
        : model_(call_cosim("CosimModel", "OK", words.object(),
                            (unsigned long long)(uintptr_t)&systolic_cosim_copy)) {}

    const char* name() const override { return "functional"; }
    bool timed() const override { return false; }
    void issue(const harness::Instr&) override { Py_DECREF(checked(PyObject_CallMethod(model_, "issue", nullptr))); }
    void dispatch_all() override {}   // each word is done as it is issued
    void fence() override {}
    void finish() override {}
    uint64_t cycles() const override { return 0; }
    uint64_t counter(int) const override { return 0; }
    double clock_seconds() const override { return 0; }

  private:
    PyObject* model_;   // lives as long as the process: the interpreter is never finalized
};

}  // namespace

std::unique_ptr<Engine> make_engine(ProcessMemory&, WordCheck& words) {
    return std::make_unique<FunctionalEngine>(words);
}

}  // namespace cosim
