// The program file (written by isa's Program.to_bytes): the hardware it targets, its
// instructions, the DRAM image and the DRAM segments to return as outputs.
#pragma once
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "failure.h"
#include "instr.h"
#include "systolic_cfg.h"
#include "systolic_isa.h"

namespace harness {

constexpr uint64_t DRAM_SLACK = 64;   // zero bytes past the end, for beat-aligned reads

struct Segment { uint64_t addr, len; };

struct Program {
    std::vector<uint32_t> hw;   // the hardware fields, in HardwareConfig.hardware_fields() order
    std::vector<Instr> instrs;
    std::vector<uint8_t> dram;   // DRAM_SLACK longer than the program's DRAM
    std::vector<Segment> inputs, outputs;
};

// Little-endian fields in file order; a read past the end is a truncated file.
struct Reader {
    const std::vector<uint8_t>& d;
    size_t pos = 0;
    const uint8_t* take(size_t n) {
        if (pos + n > d.size()) fail(2, "program file truncated");
        const uint8_t* p = d.data() + pos;
        pos += n;
        return p;
    }
    template <class T> T get() {
        T v;
        std::memcpy(&v, take(sizeof(T)), sizeof(T));
        return v;
    }
};

// Magic, version and the hardware fields: those of the RTL must be those this model was built
// with; the SoC's timing fields (HW_TIMING) are the program's to choose.
inline std::vector<uint32_t> check_header(Reader& r) {
    if (r.d.size() < 8 || std::memcmp(r.take(8), "SYSTOLIC", 8) != 0)
        fail(2, "not a program file (bad magic)");
    const uint32_t version = r.get<uint32_t>();
    if (version != 1)
        fail(2, "program file format version " + std::to_string(version) + ", harness reads 1");
    const uint32_t n_hw = r.get<uint32_t>();
    if (n_hw != N_HW_FIELDS)
        fail(2, "program file has " + std::to_string(n_hw) + " hardware fields, expected " +
                    std::to_string(N_HW_FIELDS));
    std::vector<uint32_t> hw(n_hw);
    for (uint32_t i = 0; i < n_hw; ++i) {
        const uint32_t v = hw[i] = r.get<uint32_t>();
        if (!HW_TIMING[i] && v != HW_VALUES[i])
            fail(2, std::string("program targets ") + HW_FIELDS[i] + "=" + std::to_string(v) +
                        " but this model was built with " + std::to_string(HW_VALUES[i]));
    }
    return hw;
}

// The config's name and the buffer table, which the simulation does not need.
inline void skip_names(Reader& r) {
    r.take(r.get<uint16_t>());
    const uint32_t n_buf = r.get<uint32_t>();
    for (uint32_t i = 0; i < n_buf; ++i) {
        r.take(r.get<uint16_t>());   // name
        r.take(2);                   // role and dtype
        const uint8_t ndim = r.get<uint8_t>();
        r.take(8 * size_t(ndim) + 8);   // shape and address
    }
}

inline std::vector<Instr> read_instrs(Reader& r) {
    const uint64_t n_instr = r.get<uint64_t>();
    if (n_instr > (r.d.size() / 24)) fail(2, "program file truncated (instructions)");
    std::vector<Instr> instrs(n_instr);
    for (auto& in : instrs) {
        in.funct = r.get<uint64_t>();
        in.rs1 = r.get<uint64_t>();
        in.rs2 = r.get<uint64_t>();
    }
    return instrs;
}

// A count, then (address, length) pairs, each inside the DRAM of dram_size bytes.
template <class Each>
void read_segments(Reader& r, uint64_t dram_size, const char* what, Each each) {
    const uint32_t n = r.get<uint32_t>();
    for (uint32_t i = 0; i < n; ++i) {
        const uint64_t addr = r.get<uint64_t>(), len = r.get<uint64_t>();
        if (addr + len > dram_size) fail(2, std::string(what) + " past the end of DRAM");
        each(addr, len);
    }
}

inline Program load_program(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) fail(2, std::string("cannot open program file ") + path);
    const std::vector<uint8_t> data((std::istreambuf_iterator<char>(f)),
                                    std::istreambuf_iterator<char>());
    Reader r{data};
    Program p;
    p.hw = check_header(r);
    skip_names(r);
    const uint64_t dram_size = r.get<uint64_t>();
    if (dram_size > (uint64_t(1) << 36)) fail(2, "DRAM size too large");
    p.dram.assign(dram_size + DRAM_SLACK, 0);
    p.instrs = read_instrs(r);
    read_segments(r, dram_size, "DRAM image segment", [&](uint64_t addr, uint64_t len) {
        std::memcpy(p.dram.data() + addr, r.take(len), len);
        p.inputs.push_back({addr, len});
    });
    read_segments(r, dram_size, "output segment",
                  [&](uint64_t addr, uint64_t len) { p.outputs.push_back({addr, len}); });
    if (r.pos != data.size()) fail(2, "program file has trailing bytes");
    return p;
}

// The mnemonic, from the names isa/ generates into systolic_isa.h.
inline std::string op_name(const Instr& in) {
    if (in.funct == FUNCT_CONFIG) return CONFIG_NAMES[in.rs1 & 3];   // a name for each of the 4 kinds
    for (const FunctName& f : FUNCT_NAMES) {
        if (f.funct == in.funct) return f.name;
    }
    return "funct" + std::to_string(in.funct);
}

}  // namespace harness
