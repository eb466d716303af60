// One RoCC instruction as the accelerator's command port takes it.
#pragma once
#include <cstdint>

namespace harness {

struct Instr { uint64_t funct, rs1, rs2; };

}  // namespace harness
