// Shared types and the float32 arithmetic of the scale units.
//
// The float32 functions are integer-only and bit-exact with IEEE-754 binary32
// round-to-nearest-even as numpy computes it (denormals kept, no flush to zero):
//   scale_sat(x, s) = clip(rint(float32(float32(x) * float32(s))), lo, hi)
package systolic_pkg;

  // A package is a library: a build of one unit alone (the unit benches) uses only some of
  // its constants, which is no defect of the unit, so unused package constants are not
  // reported (a module's own unused parameters still are).
  /* verilator lint_off UNUSEDPARAM */
  // funct_e, config_kind_e, counter_e, NumCounters: generated from isa/opcodes.py
  `include "systolic_isa.svh"

  localparam logic [31:0] GARBAGE_ADDR = 32'hFFFF_FFFF;
  localparam logic [31:0] F32_ONE      = 32'h3F80_0000;
  localparam logic [31:0] F32_NAN      = 32'h7FC0_0000;   // the default NaN
  localparam logic [31:0] ROW_MASK     = 32'h03FF_FFFF;   // a local address's row (bits 25:0)
  localparam int          WORD_W       = 64;   // rs1, rs2, DRAM addresses, counters
  localparam int          DMA_SLOT_W   = 15;   // dma_tag_t.slot: reservation-station slots
  localparam int          DMA_ROW_W    = 16;   // dma_tag_t.row: rows of one instruction
  /* verilator lint_on UNUSEDPARAM */

  // An instruction as dispatch issues it to a unit.
  typedef struct packed {
    funct_e            funct;
    logic [WORD_W-1:0] rs1;
    logic [WORD_W-1:0] rs2;
  } insn_t;

  // where an execute unit's result row goes
  typedef enum logic [1:0] {DestNone, DestSp, DestAcc, DestAccum} dest_e;

  // Bundles sized by module parameters. A package cannot take parameters, so their types
  // live in parameter-only classes (used as issue_types#(N)::issue_t); never constructed.
  // They belong to this package, hence to this file (not to files of their own names).
  /* verilator lint_off DECLFILENAME */

  // An instruction as a unit takes it: with its reservation-station slot (N slots).
  virtual class issue_types #(parameter int N = 10);
    typedef struct packed {
      logic [$clog2(N)-1:0] slot;
      insn_t                insn;
    } issue_t;
  endclass

  // A request to a local memory of ROWS rows of DIM lanes of LANE_W bits (the scratchpad:
  // 8, the accumulator: 32): a read of a row (the row comes the cycle after the grant), or
  // with we a write of the lanes wmask selects; with accum (accumulator only) it adds. The row's
  // data is the low bits, so that its 32-bit words are the struct's (a simulation copies them whole).
  virtual class mem_types #(parameter int DIM = 4, parameter int ROWS = 256,
                            parameter int LANE_W = 8);
    typedef struct packed {
      logic                    req;
      logic                    we;
      logic                    accum;
      logic [$clog2(ROWS)-1:0] row;
      logic [DIM-1:0]          wmask;
      logic [DIM*LANE_W-1:0]   wdata;
    } req_t;
  endclass
  /* verilator lint_on DECLFILENAME */

  // The preload merged into a compute: B (weights) and C (destination) operands.
  typedef struct packed {
    logic [WORD_W-1:0] b;
    logic [WORD_W-1:0] c;
  } preload_t;

  // Tag of a DMA transfer, returned with its read data or write acknowledgement.
  typedef struct packed {
    logic [DMA_SLOT_W-1:0] slot;   // reservation-station slot of the instruction
    logic                  last;   // the instruction's last row
    logic [DMA_ROW_W-1:0]  row;    // row index within the instruction
  } dma_tag_t;

  // A DMA request (one DRAM row), read or write.
  typedef struct packed {
    logic [WORD_W-1:0] addr;
    logic [15:0]       len;    // bytes
    dma_tag_t          tag;
  } dma_req_t;

  // What a unit reports for its cycle stack (the categories of isa/opcodes.py STACK that
  // the unit itself knows; dispatch adds hazard and queue_full).
  typedef struct packed {
    logic bank;   // a local-memory request of the unit lost arbitration
    logic dma;    // work held, and nothing of it moves for want of the DMA
    logic busy;   // work held: an instruction issued and not done
  } unit_stack_t;

  // The operand word (operand_t) and its accessors op_addr / op_cols / op_rows come from
  // systolic_isa.svh, generated from isa/loop_words.py.

  // Position of the most significant set bit (0 when x == 0); 32-bit values zero-extend.
  // A binary search, six halvings: a simulation runs six steps, not one per bit.
  function automatic logic [5:0] msb(input logic [47:0] x);
    logic [63:0] v;
    logic [5:0]  p;
    v = 64'(x);
    p = '0;
    for (int k = 5; k >= 0; k--) begin
      if ((v >> (p + 6'(1 << k))) != '0) p = p + 6'(1 << k);
    end
    return p;
  endfunction

  // int33 -> float32, round to nearest, ties to even (the normalization unit's e - mean and
  // I-exp results are 33-bit).
  function automatic logic [31:0] i33_to_f32(input logic [32:0] x);
    logic        s;
    logic [32:0] mag;
    logic [5:0]  p;
    logic [32:0] norm;
    logic [24:0] mant;
    logic        rnd, sticky;
    logic [7:0]  e;
    s   = x[32];
    mag = s ? (~x + 33'd1) : x;   // -2^32 becomes 0x1_0000_0000, read unsigned
    if (mag == '0) return 32'h0;
    p    = msb(48'(mag));
    norm = mag << (6'd32 - p);    // leading one at bit 32
    rnd    = norm[8];
    sticky = |norm[7:0];
    mant = {1'b0, norm[32:9]} + 25'((rnd && (sticky || norm[9])) ? 1 : 0);
    e    = 8'(8'd127 + 8'(p));
    if (mant[24]) begin
      e    = e + 8'd1;
      mant = mant >> 1;
    end
    return {s, e, mant[22:0]};
  endfunction

  // int32 -> float32, round to nearest, ties to even.
  function automatic logic [31:0] i32_to_f32(input logic [31:0] x);
    return i33_to_f32({x[31], x});
  endfunction

  /* verilator lint_off UNUSEDSIGNAL */   // the sign
  function automatic logic f32_is_nan(input logic [31:0] f);
    return f[30:23] == 8'hFF && f[22:0] != '0;
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  // float32 * float32, round to nearest even, with denormal operands and results; overflow
  // gives infinity. IEEE's special operands (only the normalization unit makes them: 127 / 0 is
  // infinity): a NaN, or infinity times zero, is the default NaN; infinity times anything else
  // is infinity.
  function automatic logic [31:0] f32_mul(input logic [31:0] a, input logic [31:0] b);
    logic               s;
    logic [7:0]         ea, eb;
    logic [23:0]        ma, mb;
    logic [47:0]        prod, pn;
    logic [5:0]         p;
    logic signed [11:0] be;
    logic [71:0]        ext;
    logic [24:0]        mant;
    logic               rnd, sticky;
    logic [11:0]        sh;
    s  = a[31] ^ b[31];
    ea = a[30:23];
    eb = b[30:23];
    if (f32_is_nan(a) || f32_is_nan(b)) return F32_NAN;
    if (ea == 8'hFF || eb == 8'hFF) begin   // infinity
      if ((a[30:0] == '0) || (b[30:0] == '0)) return F32_NAN;
      return {s, 8'hFF, 23'h0};
    end
    if ((a[30:0] == '0) || (b[30:0] == '0)) return {s, 31'h0};
    ma   = {ea != 8'd0, a[22:0]};
    mb   = {eb != 8'd0, b[22:0]};
    prod = 48'(ma) * 48'(mb);
    p    = msb(prod);
    pn   = prod << (6'd47 - p);
    // biased exponent of 1.f: ea_eff + eb_eff - 126 - (47 - p)
    be = 12'(ea == 8'd0 ? 1 : ea) + 12'(eb == 8'd0 ? 1 : eb) - 12'sd173 + 12'(p);
    if (be >= 12'sd1) begin
      rnd    = pn[23];
      sticky = |pn[22:0];
      mant   = {1'b0, pn[47:24]} + 25'((rnd && (sticky || pn[24])) ? 1 : 0);
      if (mant[24]) begin
        be   = be + 12'sd1;
        mant = mant >> 1;
      end
      if (be >= 12'sd255) return {s, 8'hFF, 23'h0};
      return {s, be[7:0], mant[22:0]};
    end
    // denormal result: shift right by 1 - be more places
    sh = 12'(12'sd1 - be);
    if (sh > 12'd72) sh = 12'd72;
    ext    = {pn, 24'h0} >> sh;
    rnd    = ext[47];
    sticky = |ext[46:0];
    mant   = {1'b0, ext[71:48]} + 25'((rnd && (sticky || ext[48])) ? 1 : 0);
    return {s, 31'(mant)};   // a carry into bit 23 makes the smallest normal
  endfunction

  // float32 -> int32, round half to even, saturating (infinity saturates too).
  function automatic logic [31:0] f32_to_i32(input logic [31:0] f);
    logic        s;
    logic [7:0]  e;
    logic [23:0] m;
    logic [31:0] mag, q;
    logic [4:0]  sh;
    logic        rnd, sticky;
    s = f[31];
    e = f[30:23];
    m = {e != 8'd0, f[22:0]};
    if (e >= 8'd158) return s ? 32'h8000_0000 : 32'h7FFF_FFFF;   // |v| >= 2^31
    if (e < 8'd126) return 32'h0;                                   // |v| < 0.5
    if (e >= 8'd150) begin
      mag = 32'(m) << (e - 8'd150);
    end else begin
      sh     = 5'(8'd150 - e);                                      // 1 .. 24
      q      = 32'(m) >> sh;
      rnd    = m[sh - 5'd1];
      sticky = (32'(m) & ((32'd1 << (sh - 5'd1)) - 32'd1)) != 32'd0;
      mag    = q + 32'((rnd && (sticky || q[0])) ? 1 : 0);
    end
    return s ? (~mag + 32'd1) : mag;
  endfunction

  // The scale unit: clip(rint(float32(float32(x) * scale)), lo, hi), then ReLU.
  // to_int8 clips to [-128, 127], else the result saturates to int32. A scale of 1.0 into int8
  // clips x itself: float32(x) is x within 2^24 and keeps its sign past it, where both clip alike
  // (a simulation skips the float arithmetic, the store path's every row with the usual scale).
  function automatic logic [31:0] scale_sat(input logic [31:0] x, input logic [31:0] scale,
                                            input logic to_int8, input logic relu);
    logic signed [31:0] v;
    if (to_int8 && scale == F32_ONE) v = $signed(x);
    else v = $signed(f32_to_i32(f32_mul(i32_to_f32(x), scale)));
    if (to_int8) begin
      if (v > 32'sd127) v = 32'sd127;
      else if (v < -32'sd128) v = -32'sd128;
    end
    if (relu && v < 0) v = '0;
    return v;
  endfunction

  // The store unit's requantization (an extension): clip(relu?(rint(float32(float32(x) * scale)))
  // + offset, lo, hi), [lo, hi] = [0, 255] when uint8 else [-128, 127]; the low byte of the result.
  function automatic logic [7:0] requant(input logic [31:0] x, input logic [31:0] scale,
                                         input logic relu, input logic [8:0] offset, input logic uint8);
    logic signed [32:0] v, lo, hi;
    v  = 33'($signed(scale_sat(x, scale, 1'b0, relu))) + 33'($signed(offset));
    lo = uint8 ? 33'sd0 : -33'sd128;
    hi = uint8 ? 33'sd255 : 33'sd127;
    if (v < lo) v = lo;
    else if (v > hi) v = hi;
    return v[7:0];
  endfunction

  // Arithmetic right shift by sh bits, rounding half to even (output-stationary results).
  function automatic logic [31:0] rshift_rne(input logic [31:0] x, input logic [4:0] sh);
    logic signed [31:0] q;
    logic [31:0]        rem, half;
    if (sh == '0) return x;
    q    = $signed(x) >>> sh;
    rem  = x & ((32'd1 << sh) - 32'd1);
    half = 32'd1 << (sh - 5'd1);
    return q + 32'((rem > half || (rem == half && q[0])) ? 1 : 0);
  endfunction

endpackage
