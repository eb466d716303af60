// The C program's own address space as the accelerator's DRAM: a DMA address is a pointer.
// A transfer must lie in mappings of the process that allow it (readable for a DMA read,
// writable for a DMA write); else it is refused with a message that names its address, never
// a crash. The mappings come from /proc/self/maps, read again when a transfer falls outside
// those known so far (the heap and the stack grow, mmap adds mappings).
#pragma once
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "failure.h"

namespace cosim {

class ProcessMemory {
  public:
    // Why the process may not `write` (else read) bytes [addr, addr + len), or "" when it may.
    std::string refusal(uint64_t addr, uint64_t len, bool write) {
        std::string why = look_up(addr, len, write);
        if (!why.empty()) {
            reload();
            why = look_up(addr, len, write);
        }
        if (why.empty()) return why;
        char head[96];
        std::snprintf(head, sizeof head, "DMA %s of %" PRIu64 " bytes at 0x%" PRIx64 ": ",
                      write ? "write" : "read", len, addr);
        return head + why;
    }

    // The DRAM model's interface (harness/dram.h): what is "read" or "write".
    void check(uint64_t addr, uint32_t len, const char* what) {
        const std::string why = refusal(addr, len, std::strcmp(what, "write") == 0);
        if (!why.empty()) harness::fail(2, why);
    }
    uint8_t* at(uint64_t addr) { return reinterpret_cast<uint8_t*>(addr); }

  private:
    struct Mapping { uint64_t lo, hi; bool read, write; };

    std::string look_up(uint64_t addr, uint64_t len, bool write) const {
        if (addr + len < addr) return "the range wraps around the address space";
        uint64_t at = addr;
        const uint64_t end = addr + len;
        while (at < end) {
            const Mapping* m = containing(at);
            if (!m) {
                return at == addr ? "not memory of this program (no mapping of the process holds it)"
                                  : "runs past the end of the program's memory";
            }
            if (!(write ? m->write : m->read))
                return write ? "the program's memory there is read-only" : "the program's memory there is not readable";
            at = m->hi;
        }
        return "";
    }
    const Mapping* containing(uint64_t a) const {
        for (const Mapping& m : maps_) {
            if (m.lo <= a && a < m.hi) return &m;
        }
        return nullptr;
    }
    void reload() {
        maps_.clear();
        std::FILE* f = std::fopen("/proc/self/maps", "r");
        if (!f) harness::fail(2, "cannot read /proc/self/maps to check DMA addresses");
        char line[512];
        while (std::fgets(line, sizeof line, f)) {
            unsigned long long lo, hi;
            char perms[8] = {0};
            if (std::sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) == 3)
                maps_.push_back({lo, hi, perms[0] == 'r', perms[1] == 'w'});
        }
        std::fclose(f);
    }

    std::vector<Mapping> maps_;
};

}  // namespace cosim
