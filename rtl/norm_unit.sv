// Normalization unit: Gemmini's Normalizer (the per-stat row statistics of the store path) with
// AccumulatorScale's LayerNorm / softmax / I-GELU epilogue, bit for bit as isa/norm.py (the
// numeric contract; ucb-bar/gemmini 641fefb Normalizer.scala and AccumulatorScale.scala).
//
// The store unit feeds it every accumulator block it reads for DRAM (plain, .full and pooled mvouts)
// in the block's epilogue cycle, the cycle after its read. A block of a plain (not .full, not pooling)
// mvout whose local address carries a NormCmd c != 0 is a statistics block: block b of a row carries
// isa.norm.RUNNING[c] unless it is the row's last, which carries c. It updates the current stat id's
// registers as NormStat.feed (sum wraps at 32 bits, count at 16) and writes nothing to DRAM. Every
// other block is a RESET (c == 0) block: it clears the current stat's sum, count and running max,
// whatever the activation, as every accumulator read to DMA passes Gemmini's Normalizer with RESET
// (isa.norm.NormUnit.plain_store and store). A plain RESET block under activation LAYERNORM (2), IGELU
// (3) or SOFTMAX (4) leaves as NormStat.output's int8 values (row_o), read before the clear.
// config_norm sets the stat id and, unless set_stats_id_only, I-GELU's qb, qc and I-exp's q_ln2 /
// q_ln2_inv (the store unit keeps the activation's high bit).
//
// Timing (cycles; the store unit waits on hold_o):
// * A statistics block takes the cycle of its read, like any block, and updates the stat in its
//   epilogue cycle; it needs no DMA FIFO room, since it writes nothing. A RESET block under a
//   normalizing activation is computed in its epilogue cycle (combinational, as the scale unit),
//   a row a cycle as every mvout.
// * A final (MEAN, INV_STDDEV, INV_SUM_EXP on a row's last block) holds the store unit (no read,
//   no issue) from that block's epilogue cycle until its result is written, then the next cycle
//   is free. After the epilogue cycle it takes:
//     MEAN          32: the truncating division sum / count, a quotient bit a cycle;
//     INV_STDDEV    74: the division (32), IntSqrt of the variance (16, a root bit a cycle), the
//                       reciprocal 1.0 / root (1 to set up, 24 quotient bits a cycle) and the
//                       float32 product with the mvout's scale (1);
//     INV_SUM_EXP   26: 127.0 / float32(sum) (1 + 24) and the scale's product (1); 2 when the sum
//                       is 0 (127 / 0 is infinity, no division).
//   Why: one iterative datapath (a restoring divider, a digit-by-digit square root and a
//   significand divider, each a bit a cycle) is small, needs no floating-point divider, and
//   Gemmini's own Normalizer runs its divider, square root and reciprocal for one stat at a time
//   too. Holding everything keeps the rule simple: the next block of the same mvout (a later row),
//   a later mvout's pass (VARIANCE needs the mean, SUM_EXP the max) and a config that would change
//   the stat id all wait for the result.
// * A statistics mvout is done in the epilogue cycle of its last block, or with a final on its last
//   row, in the final's last cycle.
//
// The reciprocal divides 1.0 or 127.0 by an integer-valued float32 (a root of 1 .. 65535, or a
// 32-bit sum): its result is always a normal float32 (2^-31 .. 127), so the significand divider has
// no overflow or denormal cases; a zero divisor gives infinity, and infinity times the scale is
// infinity (or NaN for a zero scale), which the int8 conversion saturates (NaN to 127).
module norm_unit import systolic_pkg::*; #(
  parameter int  DIM        = 4,
  parameter int  NORM_STATS = 4,    // stat ids (Gemmini's num_stats)
  parameter int  N          = 10,   // reservation-station slots
  localparam int SLOT_W     = $clog2(N),
  localparam int SID_W      = (NORM_STATS > 1) ? $clog2(NORM_STATS) : 1
) (
  input  logic                clk_i,
  input  logic                rst_ni,
  // a config_norm issues
  input  logic                cfg_valid_i,
  input  logic [WORD_W-1:0]   cfg_rs1_i,
  input  logic [WORD_W-1:0]   cfg_rs2_i,
  // the accumulator block in the store unit's epilogue this cycle
  input  logic                blk_valid_i,      // an accumulator block read for DRAM (any mvout)
  input  logic                blk_plain_i,      // of a plain mvout (not .full, not pooling)
  input  logic [2:0]          blk_cmd_i,        // the mvout's NormCmd (0: RESET; 0 unless plain)
  input  logic                blk_row_last_i,   // the block is its row's last
  input  logic                blk_last_i,       // the block is the mvout's last
  input  logic [2:0]          blk_act_i,        // the store activation (3 bits)
  input  logic [15:0]         blk_cols_i,       // the block's columns (at most DIM)
  input  logic [31:0]         blk_scale_i,      // config_st's scale (float32)
  input  logic [SLOT_W-1:0]   blk_slot_i,
  input  logic [DIM*32-1:0]   blk_data_i,
  // a RESET block under LAYERNORM / IGELU / SOFTMAX: its int8 lanes
  output logic [DIM*8-1:0]    row_o,
  // a final runs (or its block is in the epilogue): the store unit reads and issues nothing
  output logic                hold_o,
  // a statistics mvout completes
  output logic                done_o,
  output logic [SLOT_W-1:0]   done_slot_o
);
  // isa.norm.NormCmd and the normalizing activations (isa.norm.Act)
  localparam logic [2:0] CmdReset = 3'd0, CmdSum = 3'd1, CmdMean = 3'd2, CmdVariance = 3'd3,
                         CmdInvStddev = 3'd4, CmdMax = 3'd5, CmdSumExp = 3'd6, CmdInvSumExp = 3'd7;
  localparam logic [2:0] ActLayernorm = 3'd2, ActIgelu = 3'd3, ActSoftmax = 3'd4;
  localparam logic [31:0] INT32_MIN = 32'h8000_0000;
  localparam logic [31:0] F32_127   = 32'h42FE_0000;

  if (NORM_STATS < 1 || NORM_STATS > 256) begin : g_stats_check
    $error("norm_unit: NORM_STATS = %0d, config_norm's stat id is 8 bits (1 .. 256)", NORM_STATS);
  end

  // ---- the kernels (isa/norm.py) ---------------------------------------------------
  // NormCmd.non_reset_version: what a row's blocks before its last carry
  function automatic logic [2:0] running(input logic [2:0] c);
    unique case (c)
      CmdMean:      return CmdSum;
      CmdInvStddev: return CmdVariance;
      CmdInvSumExp: return CmdSumExp;
      default:      return c;
    endcase
  endfunction

  // I-exp of a 33-bit q: z = bits 48:16 of -q * q_ln2_inv; p = q + z * q_ln2 (33 bits);
  // (qc + (p + qb)^2) (33 bits, unsigned) >> z, z saturated to 32 when any of its bits 5..15 is set
  // (and 0 when z >= 33)
  /* verilator lint_off UNUSEDSIGNAL */   // the product's bits below 16
  function automatic logic [32:0] iexp(input logic [32:0] q, input logic [31:0] qln2,
                                       input logic [31:0] qln2_inv, input logic [31:0] qb,
                                       input logic [31:0] qc);
    logic [48:0] prod;
    logic [32:0] z, t, poly;
    prod = (49'd0 - {{16{q[32]}}, q}) * {{17{qln2_inv[31]}}, qln2_inv};
    z    = prod[48:16];
    t    = z * {qln2[31], qln2} + q + {qb[31], qb};
    poly = t * t + {qc[31], qc};
    if (|z[15:5]) return {32'd0, poly[32]};
    if (|z[32:16]) return '0;
    return poly >> z[4:0];
  endfunction

  // I-GELU of an int32 q: q * (sign(q) * ((min(|q|, -qb) + qb)^2 + qc) + qc), each wrapped to 32 bits
  function automatic logic [31:0] igelu(input logic [31:0] q, input logic [31:0] qb,
                                        input logic [31:0] qc);
    logic [32:0] mag, lim, clipped;
    logic [31:0] t, poly, erf;
    mag     = q[31] ? 33'd0 - {q[31], q} : {1'b0, q};
    lim     = 33'd0 - {qb[31], qb};
    clipped = ($signed(mag) < $signed(lim)) ? mag : lim;
    t       = clipped[31:0] + qb;
    poly    = t * t + qc;
    erf     = q[31] ? 32'd0 - poly : poly;
    return q * (erf + qc);
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  // Configs.scala's scale function, then clippedToWidthOf(int8): float32(x) * s rounded once, to
  // the nearest even integer, saturated; a NaN (0 * infinity) is the largest
  function automatic logic [7:0] to_int8(input logic [32:0] x, input logic [31:0] s);
    logic [31:0]        p;
    logic signed [31:0] v;
    p = f32_mul(i33_to_f32(x), s);
    if (f32_is_nan(p)) return 8'd127;
    v = $signed(f32_to_i32(p));
    if (v > 32'sd127) return 8'd127;
    if (v < -32'sd128) return 8'h80;
    return v[7:0];
  endfunction

  // ---- config_norm ------------------------------------------------------------------
  /* verilator lint_off UNUSEDSIGNAL */   // the kind, act_msb (the store unit's) and the stat id's high bits
  config_norm_rs1_t nrs1;
  config_norm_rs2_t nrs2;
  logic [7:0]       sid_q, sid_d;
  /* verilator lint_on UNUSEDSIGNAL */
  logic [31:0]      qb_q, qb_d, qc_q, qc_d, qln2_q, qln2_d, qln2_inv_q, qln2_inv_d;
  logic [SID_W-1:0] sid;
  assign nrs1 = cfg_rs1_i;
  assign nrs2 = cfg_rs2_i;
  assign sid  = sid_q[SID_W-1:0];

  always_comb begin
    sid_d      = sid_q;
    qb_d       = qb_q;
    qc_d       = qc_q;
    qln2_d     = qln2_q;
    qln2_inv_d = qln2_inv_q;
    if (cfg_valid_i) begin
      sid_d = nrs1.stat_id;
      if (!nrs1.set_stats_id_only) begin
        qb_d = nrs2.qb;
        qc_d = nrs2.qc;
        if (nrs1.q_const_type) qln2_inv_d = nrs1.q_const;
        else                   qln2_d     = nrs1.q_const;
      end
    end
  end

  // ---- the stat registers (Normalizer.Stats; mean and the reciprocals from 0) --------------
  logic [NORM_STATS-1:0][31:0] sum_q, sum_d, rmax_q, rmax_d, max_q, max_d, mean_q, mean_d;
  logic [NORM_STATS-1:0][31:0] istd_q, istd_d, ise_q, ise_d;
  logic [NORM_STATS-1:0][15:0] count_q, count_d;

  // the final's datapath: one command at a time
  typedef enum logic [2:0] {FIdle, FDiv, FSqrt, FInit, FRecip, FScale} fstate_e;
  fstate_e           fst_q, fst_d;
  logic [4:0]        fcnt_q, fcnt_d;
  logic [SID_W-1:0]  fid_q, fid_d;
  logic              fstd_q, fstd_d;     // INV_STDDEV (else INV_SUM_EXP) after the division
  logic              fmean_q, fmean_d;   // MEAN: the division is the result
  logic              flast_q, flast_d;   // the mvout's last row: done when written
  logic [SLOT_W-1:0] fslot_q, fslot_d;
  logic [31:0]       fscale_q, fscale_d;
  // restoring division of |sum| by count: the dividend shifts out as the quotient shifts in
  logic [31:0]       dq_q, dq_d;
  logic [15:0]       drem_q, drem_d, dden_q, dden_d;
  logic              dneg_q, dneg_d;
  // IntSqrt: the root and its remainder (the radicand shifts through dq)
  logic [15:0]       sroot_q, sroot_d;
  logic [17:0]       srem_q, srem_d;
  // the reciprocal a / b: its operands, then the quotient, remainder, exponent and sign
  logic [31:0]       fa_q, fa_d, fb_q, fb_d, fres_q, fres_d;
  logic [24:0]       fq_q, fq_d;
  logic [23:0]       frem_q, frem_d;
  logic [9:0]        fexp_q, fexp_d;

  logic [2:0]  cmd;        // the block's command (RUNNING unless the row's last block)
  logic        stats_blk, reset_blk, norm_out, is_final;
  assign stats_blk = blk_valid_i && blk_cmd_i != CmdReset;
  assign reset_blk = blk_valid_i && blk_cmd_i == CmdReset;
  assign norm_out  = reset_blk && blk_plain_i
                  && (blk_act_i == ActLayernorm || blk_act_i == ActIgelu || blk_act_i == ActSoftmax);
  assign cmd       = blk_row_last_i ? blk_cmd_i : running(blk_cmd_i);
  assign is_final  = cmd == CmdMean || cmd == CmdInvStddev || cmd == CmdInvSumExp;
  assign hold_o    = (stats_blk && is_final) || fst_q != FIdle;

  // a RESET block's int8 lanes (isa.norm.NormStat.output); computed only for such a block
  always_comb begin
    logic [31:0] e, g, s;
    logic [32:0] x;
    row_o = '0;
    e     = '0;
    g     = '0;
    s     = '0;
    x     = '0;
    if (norm_out) begin
      for (int i = 0; i < DIM; i++) begin
        e = blk_data_i[i*32 +: 32];
        g = igelu(e, qb_q, qc_q);
        unique case (blk_act_i)
          ActLayernorm: begin
            x = {e[31], e} - {mean_q[sid][31], mean_q[sid]};
            s = istd_q[sid];
          end
          ActSoftmax: begin
            x = iexp({e[31], e} - {max_q[sid][31], max_q[sid]}, qln2_q, qln2_inv_q, qb_q, qc_q);
            s = ise_q[sid];
          end
          default: begin   // IGELU, by config_st's scale
            x = {g[31], g};
            s = blk_scale_i;
          end
        endcase
        row_o[i*8 +: 8] = to_int8(x, s);
      end
    end
  end

  always_comb begin
    logic [31:0] bsum, bmax, sum_new, term, e, res;
    logic [15:0] count_new;
    logic [16:0] r2;
    logic [19:0] sa, sb;
    logic [24:0] f2;
    logic [24:0] mant;
    logic [23:0] ma, mb;
    logic        ge;
    bsum = '0;
    bmax = INT32_MIN;
    term = '0;
    e    = '0;
    res  = '0;
    r2   = '0;
    sa   = '0;
    sb   = '0;
    f2   = '0;
    mant = '0;
    ma   = '0;
    mb   = '0;
    ge   = 1'b0;
    sum_d      = sum_q;
    rmax_d     = rmax_q;
    max_d      = max_q;
    mean_d     = mean_q;
    istd_d     = istd_q;
    ise_d      = ise_q;
    count_d    = count_q;
    fst_d      = fst_q;
    fcnt_d     = fcnt_q;
    fid_d      = fid_q;
    fstd_d     = fstd_q;
    fmean_d    = fmean_q;
    flast_d    = flast_q;
    fslot_d    = fslot_q;
    fscale_d   = fscale_q;
    dq_d       = dq_q;
    drem_d     = drem_q;
    dden_d     = dden_q;
    dneg_d     = dneg_q;
    sroot_d    = sroot_q;
    srem_d     = srem_q;
    fa_d       = fa_q;
    fb_d       = fb_q;
    fres_d     = fres_q;
    fq_d       = fq_q;
    frem_d     = frem_q;
    fexp_d     = fexp_q;
    done_o      = 1'b0;
    done_slot_o = blk_slot_i;
    sum_new   = sum_q[sid];
    count_new = count_q[sid];
    // ---- a statistics block (NormStat.feed) ----
    if (stats_blk) begin
      for (int i = 0; i < DIM; i++) begin
        e = blk_data_i[i*32 +: 32];
        if (16'(i) < blk_cols_i) begin
          if (cmd == CmdVariance || cmd == CmdInvStddev) begin
            term = (e - mean_q[sid]) * (e - mean_q[sid]);
          end else if (cmd == CmdSumExp || cmd == CmdInvSumExp) begin
            term = iexp({e[31], e} - {max_q[sid][31], max_q[sid]}, qln2_q, qln2_inv_q, qb_q,
                        qc_q)[31:0];
          end else begin
            term = e;
          end
          bsum = bsum + term;
          if ($signed(e) > $signed(bmax)) bmax = e;
        end
      end
      count_new      = count_q[sid] + blk_cols_i;
      count_d[sid]   = count_new;
      if (cmd == CmdMax) begin
        if ($signed(rmax_q[sid]) > $signed(bmax)) bmax = rmax_q[sid];
        rmax_d[sid] = bmax;
        max_d[sid]  = bmax;
      end else begin
        sum_new    = sum_q[sid] + bsum;
        sum_d[sid] = sum_new;
      end
      if (is_final) begin
        fid_d    = sid;
        flast_d  = blk_last_i;
        fslot_d  = blk_slot_i;
        fscale_d = blk_scale_i;
        fmean_d  = cmd == CmdMean;
        fstd_d   = cmd == CmdInvStddev;
      end
      if (cmd == CmdMean || cmd == CmdInvStddev) begin   // divide, and clear the running state
        fst_d        = FDiv;
        fcnt_d       = 5'd31;
        dneg_d       = sum_new[31];
        dq_d         = sum_new[31] ? 32'd0 - sum_new : sum_new;
        drem_d       = '0;
        dden_d       = count_new;
        sum_d[sid]   = '0;
        count_d[sid] = '0;
        rmax_d[sid]  = INT32_MIN;
      end else if (cmd == CmdInvSumExp) begin
        fst_d = FInit;
        fa_d  = F32_127;
        fb_d  = i32_to_f32(sum_new);
      end else if (blk_last_i) begin
        done_o = 1'b1;
      end
    end
    // ---- a RESET block, whatever the activation: NormStat.clear_running ----
    if (reset_blk) begin
      sum_d[sid]   = '0;
      count_d[sid] = '0;
      rmax_d[sid]  = INT32_MIN;
    end
    // ---- the final's datapath ----
    unique case (fst_q)
      FDiv: begin   // a quotient bit a cycle, from the top
        r2     = {drem_q, dq_q[31]};
        ge     = r2 >= {1'b0, dden_q};
        drem_d = ge ? 16'(r2 - {1'b0, dden_q}) : r2[15:0];
        dq_d   = {dq_q[30:0], ge};
        fcnt_d = fcnt_q - 5'd1;
        if (fcnt_q == '0) begin
          // isa.norm.trunc_div: toward zero; a zero count gives RecFNToIN's infinity
          if (dden_q == '0) res = dneg_q ? INT32_MIN : 32'h7FFF_FFFF;
          else              res = dneg_q ? 32'd0 - dq_d : dq_d;
          if (fmean_q) begin
            mean_d[fid_q] = res;
            fst_d         = FIdle;
            done_o        = flast_q;
            done_slot_o   = fslot_q;
          end else begin   // the variance, read unsigned, to IntSqrt
            dq_d    = res;
            sroot_d = '0;
            srem_d  = '0;
            fcnt_d  = 5'd15;
            fst_d   = FSqrt;
          end
        end
      end
      FSqrt: begin   // a root bit a cycle: remainder:next two bits against root:01
        sa      = {srem_q, dq_q[31:30]};
        sb      = {2'b00, sroot_q, 2'b01};
        ge      = sa >= sb;
        srem_d  = ge ? 18'(sa - sb) : sa[17:0];
        sroot_d = {sroot_q[14:0], ge};
        dq_d    = {dq_q[29:0], 2'b00};
        fcnt_d  = fcnt_q - 5'd1;
        if (fcnt_q == '0) begin   // isa.norm.int_sqrt: 0 gives 1
          fa_d  = F32_ONE;
          fb_d  = i32_to_f32((sroot_d == '0) ? 32'd1 : 32'(sroot_d));
          fst_d = FInit;
        end
      end
      FInit: begin   // a / b: the first quotient bit (1), its remainder and the exponent
        if (fb_q[30:0] == '0) begin   // 127 / 0: infinity
          fres_d = {fa_q[31] ^ fb_q[31], 8'hFF, 23'h0};
          fst_d  = FScale;
        end else begin
          ma     = {1'b1, fa_q[22:0]};
          mb     = {1'b1, fb_q[22:0]};
          fexp_d = 10'(fa_q[30:23]) - 10'(fb_q[30:23]) + 10'd127;
          if (ma < mb) begin   // the quotient's leading one is a place lower
            frem_d = 24'({ma, 1'b0} - {1'b0, mb});
            fexp_d = fexp_d - 10'd1;
          end else begin
            frem_d = ma - mb;
          end
          fq_d   = 25'd1;
          fcnt_d = 5'd23;
          fst_d  = FRecip;
        end
      end
      FRecip: begin   // 24 more quotient bits, then round to nearest even (the last is the guard)
        f2     = {frem_q, 1'b0};
        ge     = f2 >= {2'b01, fb_q[22:0]};
        frem_d = ge ? 24'(f2 - {2'b01, fb_q[22:0]}) : f2[23:0];
        fq_d   = {fq_q[23:0], ge};
        fcnt_d = fcnt_q - 5'd1;
        if (fcnt_q == '0) begin
          mant = {1'b0, fq_d[24:1]} + 25'((fq_d[0] && (frem_d != '0 || fq_d[1])) ? 1 : 0);
          if (mant[24]) begin
            fres_d = {fa_q[31] ^ fb_q[31], 8'(fexp_q + 10'd1), mant[23:1]};
          end else begin
            fres_d = {fa_q[31] ^ fb_q[31], fexp_q[7:0], mant[22:0]};
          end
          fst_d = FScale;
        end
      end
      FScale: begin   // times the mvout's scale
        if (fstd_q) istd_d[fid_q] = f32_mul(fres_q, fscale_q);
        else        ise_d[fid_q]  = f32_mul(fres_q, fscale_q);
        fst_d       = FIdle;
        done_o      = flast_q;
        done_slot_o = fslot_q;
      end
      default: ;
    endcase
  end

  // ---- registers ----------------------------------------------------------------
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      sid_q      <= '0;
      qb_q       <= '0;
      qc_q       <= '0;
      qln2_q     <= '0;
      qln2_inv_q <= '0;
      sum_q      <= '0;
      count_q    <= '0;
      rmax_q     <= {NORM_STATS{INT32_MIN}};
      max_q      <= {NORM_STATS{INT32_MIN}};
      mean_q     <= '0;
      istd_q     <= '0;
      ise_q      <= '0;
      fst_q      <= FIdle;
    end else begin
      sid_q      <= sid_d;
      qb_q       <= qb_d;
      qc_q       <= qc_d;
      qln2_q     <= qln2_d;
      qln2_inv_q <= qln2_inv_d;
      sum_q      <= sum_d;
      count_q    <= count_d;
      rmax_q     <= rmax_d;
      max_q      <= max_d;
      mean_q     <= mean_d;
      istd_q     <= istd_d;
      ise_q      <= ise_d;
      fst_q      <= fst_d;
    end
  end

  always_ff @(posedge clk_i) begin
    fcnt_q   <= fcnt_d;
    fid_q    <= fid_d;
    fstd_q   <= fstd_d;
    fmean_q  <= fmean_d;
    flast_q  <= flast_d;
    fslot_q  <= fslot_d;
    fscale_q <= fscale_d;
    dq_q     <= dq_d;
    drem_q   <= drem_d;
    dden_q   <= dden_d;
    dneg_q   <= dneg_d;
    sroot_q  <= sroot_d;
    srem_q   <= srem_d;
    fa_q     <= fa_d;
    fb_q     <= fb_d;
    fres_q   <= fres_d;
    fq_q     <= fq_d;
    frem_q   <= frem_d;
    fexp_q   <= fexp_d;
  end
endmodule
