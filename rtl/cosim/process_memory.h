// The C program's own address space as the accelerator's DRAM: a DMA address is a pointer.
// A transfer must lie in mappings of the process that allow it (readable for a DMA read,
// writable for a DMA write); else it is refused with a message that names its address, never
// a crash. Two checks, for two moments:
// * when the DMA takes a transfer (check, refusal): against the mappings of /proc/self/maps, read
//   again when a transfer falls outside those known so far (the heap and the stack grow, mmap adds
//   mappings). A mapping known from before may be gone since (free() unmaps, mprotect), so this
//   check alone may pass what the next one refuses;
// * when the bytes move (read, write, copy): the copy is the kernel's (process_vm_readv/writev on
//   the process itself), which fails with EFAULT, not SIGSEGV, on a page the process cannot read
//   or write at that moment; the mappings, read again, then say why.
#pragma once
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
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
        return why.empty() ? why : head(addr, len, write) + why;
    }

    // Copy len bytes between `buf` and the process's memory at addr (into it when `write`), at the
    // moment of the call; "" when done, else why not (nothing is copied then, or part of it).
    std::string copy(uint64_t addr, void* buf, uint64_t len, bool write) {
        if (len == 0) return "";
        struct iovec local = {buf, len};
        struct iovec remote = {reinterpret_cast<void*>(addr), len};
        const ssize_t n = write ? process_vm_writev(getpid(), &local, 1, &remote, 1, 0)
                                : process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
        if (n == static_cast<ssize_t>(len)) return "";
        const int error = n < 0 ? errno : EFAULT;   // a short copy stopped at a page it could not move
        reload();
        std::string why = look_up(addr, len, write);
        if (why.empty()) why = std::string("the kernel refused the copy: ") + std::strerror(error);
        return head(addr, len, write) + why;
    }

    // The DRAM model's interface (harness/dram.h): what is "read" or "write".
    void check(uint64_t addr, uint32_t len, const char* what) {
        fail_if(refusal(addr, len, std::strcmp(what, "write") == 0));
    }
    void read(uint64_t addr, uint8_t* dst, uint32_t len) { fail_if(copy(addr, dst, len, false)); }
    void write(uint64_t addr, const uint8_t* src, uint32_t len) {
        fail_if(copy(addr, const_cast<uint8_t*>(src), len, true));
    }

  private:
    struct Mapping { uint64_t lo, hi; bool read, write; };

    static void fail_if(const std::string& why) {
        if (!why.empty()) harness::fail(2, why);
    }
    static std::string head(uint64_t addr, uint64_t len, bool write) {
        char text[96];
        std::snprintf(text, sizeof text, "DMA %s of %" PRIu64 " bytes at 0x%" PRIx64 ": ",
                      write ? "write" : "read", len, addr);
        return text;
    }

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
