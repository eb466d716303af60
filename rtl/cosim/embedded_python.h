// The Python interpreter inside every program the runtime links: the runtime checks each word with
// the toolkit's own checker (isa.checker.WordChecker, through simulators/cosim_functional.py), and
// the functional engine runs the toolkit's functional model. One interpreter, started once.
#pragma once
#include <Python.h>

#include <string>

#include "engine.h"
#include "failure.h"

namespace cosim {

// The pending Python exception as one line, and cleared.
inline std::string python_error() {
    PyObject *type, *value, *trace;
    PyErr_Fetch(&type, &value, &trace);
    PyErr_NormalizeException(&type, &value, &trace);
    std::string msg = "the embedded Python failed";
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

// A new reference, or the pending exception as a Failure.
inline PyObject* checked(PyObject* result) {
    if (!result) harness::fail(2, python_error());
    return result;
}

// The interpreter, isolated (no PYTHON* variables, no user site), with the toolkit's path first;
// a second call does nothing. It is never finalized: it lives as long as the process.
inline void start_python() {
    if (Py_IsInitialized()) return;
    PyConfig config;
    PyConfig_InitIsolatedConfig(&config);
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
}

// simulators.cosim_functional.NAME(args...), a new reference.
template <class... Args> PyObject* call_cosim(const char* name, const char* format, Args... args) {
    PyObject* module = checked(PyImport_ImportModule("simulators.cosim_functional"));
    PyObject* result = PyObject_CallMethod(module, name, format, args...);
    Py_DECREF(module);
    return checked(result);
}

}  // namespace cosim
