// A run that cannot go on: its exit status (listed in main.cpp) and its message.
// Thrown, so that --batch can report it and go on with the next program.
#pragma once
#include <string>

namespace harness {

struct Failure {
    int code;
    std::string msg;
};

[[noreturn]] inline void fail(int code, const std::string& msg) { throw Failure{code, msg}; }

}  // namespace harness
