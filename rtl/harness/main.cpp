// Harness of the Verilated accelerator: reads a program file, models DRAM behind
// the DMA ports, feeds the instructions, runs to completion and writes a results
// file (cycles, counters, output DRAM segments, optional per-instruction log).
//
//   Vsim PROGRAM RESULTS [--log] [--trace-fst FILE | --trace-vcd FILE] [--cycle-limit N]
//                        [--watchdog N] [--drop-dma-responses]
//   Vsim --batch
// (a waveform needs a model built with Verilator's --trace-fst or --trace; N is decimal
// digits, and --cycle-limit 0 is no limit)
//
// --batch runs many programs in one process, so that small programs do not pay a
// process start each: every line on stdin is one run's arguments (PROGRAM, RESULTS
// and options as above), separated by tabs; for each, one line goes to stdout:
// "ok", or "error CODE MESSAGE" with the exit status a single run would have had.
// Each run gets a freshly constructed model (registers and memories zeroed) and a
// fresh DRAM, so nothing of one program reaches the next. EOF ends the process.
//
// The parts, one header each: args.h (the arguments), program.h (the program file),
// dram.h (the DRAM model, documented in the README, "The DRAM model"), model.h (the
// Verilated model and its waveform), machine.h (the model, its DRAM and the clock loop),
// instr_log.h (--log), stall_report.h (the watchdog's message), results.h (the results
// file) and run.h (one program file to its results).
//
// Exit status: 0 done, 2 bad arguments or program file, 3 watchdog (no progress),
// 4 cycle limit reached, 5 the RTL's cycle counter disagrees with the harness's count.
// Errors go to stderr, one paragraph (in --batch mode, to the program's status line).
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>
#ifdef __linux__
#include <csignal>
#include <sys/prctl.h>
#endif

#include "args.h"
#include "failure.h"
#include "run.h"

namespace {

using harness::Failure;

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
            harness::run_program(harness::parse_args(harness::split_tabs(line)));
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
        harness::run_program(harness::parse_args(std::vector<std::string>(argv + 1, argv + argc)));
    } catch (const Failure& f) {
        std::fprintf(stderr, "error: %s\n", f.msg.c_str());
        return f.code;
    }
    return 0;
}
