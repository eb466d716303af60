// The functional model as the engine, through an embedded Python interpreter that runs the
// toolkit's own model (simulators/cosim_functional.py over simulators/functional.py): one
// home for the semantics, so that what the model learns (a dataflow, the transposer, pooling)
// the C runtime has too. It executes each word as it arrives and has no timing.
#include <Python.h>

#include <memory>
#include <string>

#include "engine.h"

extern "C" const char* systolic_cosim_refusal(uint64_t addr, uint64_t len, int write);

namespace cosim {
namespace {

// The pending Python exception as one line, and cleared.
std::string python_error() {
    PyObject *type, *value, *trace;
    PyErr_Fetch(&type, &value, &trace);
    PyErr_NormalizeException(&type, &value, &trace);
    std::string msg = "the functional model failed";
    if (value) {
        PyObject* text = PyObject_Str(value);
        if (text && PyUnicode_Check(text)) msg = PyUnicode_AsUTF8(text);
        Py_XDECREF(text);
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(trace);
    return msg;
}

PyObject* checked(PyObject* result) {
    if (!result) harness::fail(2, python_error());
    return result;
}

class FunctionalEngine : public Engine {
  public:
    FunctionalEngine() {
        PyConfig config;
        PyConfig_InitIsolatedConfig(&config);   // no PYTHON* variables, no user site: the path below
        config.install_signal_handlers = 0;
        PyStatus status = Py_InitializeFromConfig(&config);
        PyConfig_Clear(&config);
        if (PyStatus_Exception(status)) harness::fail(2, "cannot start the embedded Python interpreter");
        PyObject* sys_path = PySys_GetObject("path");
        std::string paths = systolic_cosim_pythonpath;
        for (size_t start = 0, end; start <= paths.size(); start = end + 1) {
            end = paths.find(':', start);
            if (end == std::string::npos) end = paths.size();
            PyObject* entry = PyUnicode_FromString(paths.substr(start, end - start).c_str());
            PyList_Insert(sys_path, 0, entry);
            Py_DECREF(entry);
        }
        PyObject* module = checked(PyImport_ImportModule("simulators.cosim_functional"));
        model_ = checked(PyObject_CallMethod(module, "CosimModel", "sK", systolic_cosim_hw_toml,
                                             (unsigned long long)(uintptr_t)&systolic_cosim_refusal));
        Py_DECREF(module);
    }

    const char* name() const override { return "functional"; }
    bool timed() const override { return false; }
    void issue(const harness::Instr& in) override {
        Py_DECREF(checked(PyObject_CallMethod(model_, "issue", "KKK", (unsigned long long)in.funct,
                                              (unsigned long long)in.rs1, (unsigned long long)in.rs2)));
    }
    void dispatch_all() override {}   // each word is done as it is issued
    void fence() override {}
    void finish() override {}
    uint64_t cycles() const override { return 0; }
    uint64_t counter(int) const override { return 0; }
    double clock_seconds() const override { return 0; }

  private:
    PyObject* model_ = nullptr;   // lives as long as the process: the interpreter is never finalized
};

}  // namespace

std::unique_ptr<Engine> make_engine(ProcessMemory&) { return std::make_unique<FunctionalEngine>(); }

}  // namespace cosim
