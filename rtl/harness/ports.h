// Bit access on Verilator port types: an integer up to 64 bits, or VlWide past that.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "systolic_cfg.h"
#include "verilated.h"

namespace harness {

// the instruction slots of the three queues: the width of the per-slot ports
constexpr int N_SLOTS = CFG_LD_QUEUE + CFG_EX_QUEUE + CFG_ST_QUEUE;

template <class T> inline uint32_t get32(const T& v, int word) {
    return uint32_t(uint64_t(v) >> (32 * word));
}
template <std::size_t W> inline uint32_t get32(const VlWide<W>& v, int word) { return v[word]; }
template <class T> inline uint64_t get64(const T& v, int word) {
    return uint64_t(get32(v, 2 * word)) | uint64_t(get32(v, 2 * word + 1)) << 32;
}
template <class T> inline bool getbit(const T& v, int i) {
    return (get32(v, i / 32) >> (i % 32)) & 1u;
}
template <class T> inline uint32_t getbits(const T& v, int lo, int width) {
    uint32_t r = 0;
    for (int i = 0; i < width; ++i) r |= uint32_t(getbit(v, lo + i)) << i;
    return r;
}
template <class T> inline void set_bytes(T& v, const uint8_t* src, size_t n) {
    uint64_t x = 0;
    for (size_t i = 0; i < n && i < sizeof(T); ++i) x |= uint64_t(src[i]) << (8 * i);
    v = T(x);
}
// A wide port's words are little-endian 32-bit words, byte 0 in the low bits of word 0: on a
// little-endian host its bytes are the row's bytes in order, copied whole (a DMA row is up to
// 256 bytes, moved most cycles of a busy run).
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the harness copies port words as bytes");
template <std::size_t W> inline void set_bytes(VlWide<W>& v, const uint8_t* src, size_t n) {
    const size_t len = n < W * 4 ? n : W * 4;
    std::memcpy(v.data(), src, len);
    std::memset(reinterpret_cast<uint8_t*>(v.data()) + len, 0, W * 4 - len);
}
template <class T> inline void get_bytes(const T& v, uint8_t* dst, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = uint8_t(get32(v, int(i / 4)) >> (8 * (i % 4)));
}
template <std::size_t W> inline void get_bytes(const VlWide<W>& v, uint8_t* dst, size_t n) {
    std::memcpy(dst, v.data(), n < W * 4 ? n : W * 4);
}

}  // namespace harness
