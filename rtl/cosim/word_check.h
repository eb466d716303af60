// The one rule for every word a C program issues, on either engine: the runtime hands each word to
// the toolkit's checker (isa.checker.WordChecker) before the engine sees it. A word it refuses (a
// funct the ISA lacks, a reserved bit, a row past the scratchpad or accumulator, a config the word
// needs missing, a loop field we lack) stops the program with the checker's message, which names
// the word by its index and its fields; the RTL never runs it, the functional model neither.
#pragma once
#include <cstdint>

#include "embedded_python.h"
#include "instr.h"

namespace cosim {

class WordCheck {
  public:
    WordCheck() {
        start_python();
        words_ = call_cosim("CosimWords", "s", systolic_cosim_hw_toml);
    }
    // Throw harness::Failure with the checker's message when the word may not run.
    void check(const harness::Instr& in) {
        Py_DECREF(checked(PyObject_CallMethod(words_, "check", "KKK", (unsigned long long)in.funct,
                                              (unsigned long long)in.rs1, (unsigned long long)in.rs2)));
    }
    // The Python CosimWords: the functional engine runs the primitives of the word last checked.
    PyObject* object() const { return words_; }

  private:
    PyObject* words_ = nullptr;   // lives as long as the process, as the interpreter does
};

}  // namespace cosim
