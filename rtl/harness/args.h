// The arguments of one run (main.cpp lists them), from the command line or a --batch line.
// A number must be all decimal digits and fit 64 bits: strtoull would take "abc" as 0,
// "-1" as 2^64-1 and "12x" as 12, and run with a limit nobody asked for.
#pragma once
#include <charconv>
#include <cstdint>
#include <string>
#include <system_error>
#include <vector>

#include "failure.h"

namespace harness {

struct Options {
    std::string program, results, wave;
    bool log = false, drop_responses = false;
    uint64_t cycle_limit = 0, watchdog = 100000;   // cycle_limit 0: none
};

inline uint64_t parse_u64(const std::string& option, const std::string& text) {
    uint64_t v = 0;
    const char* end = text.data() + text.size();
    const auto [stop, err] = std::from_chars(text.data(), end, v);
    const std::string quoted = option + ": \"" + text + "\"";
    if (err == std::errc::result_out_of_range) fail(2, quoted + " does not fit in 64 bits");
    if (err != std::errc() || stop != end) fail(2, quoted + " is not a number");
    return v;
}

inline Options parse_args(const std::vector<std::string>& args) {
    if (args.size() < 2) {
        fail(2, "usage: Vsim PROGRAM RESULTS [--log] [--trace-fst FILE | --trace-vcd FILE] "
                "[--cycle-limit N] [--watchdog N] [--drop-dma-responses], or Vsim --batch");
    }
    Options o;
    o.program = args[0];
    o.results = args[1];
    for (size_t i = 2; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&]() -> const std::string& {
            if (i + 1 == args.size()) fail(2, a + ": missing its value");
            return args[++i];
        };
        if (a == "--log") o.log = true;
        else if (a == "--drop-dma-responses") o.drop_responses = true;
        else if (a == "--trace-fst" || a == "--trace-vcd") o.wave = value();
        else if (a == "--cycle-limit") o.cycle_limit = parse_u64(a, value());
        else if (a == "--watchdog") o.watchdog = parse_u64(a, value());
        else fail(2, "unknown argument " + a);
    }
    return o;
}

// A --batch line: its arguments are separated by tabs, so that paths may hold spaces.
inline std::vector<std::string> split_tabs(const std::string& line) {
    std::vector<std::string> out;
    std::string::size_type start = 0, tab;
    while ((tab = line.find('\t', start)) != std::string::npos) {
        out.push_back(line.substr(start, tab - start));
        start = tab + 1;
    }
    out.push_back(line.substr(start));
    return out;
}

}  // namespace harness
