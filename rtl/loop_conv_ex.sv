// LoopConv's execute sequencer (Execute): a preload and a compute per block of up to DIM output
// pixels (of one row), DIM output channels and max_pixels_per_row kernel columns x DIM input
// channels. The first block of each set of weights (kernel pixel, channel blocks) preloads them
// and computes with compute_preloaded; the rest keep them (garbage B, compute_accumulated).
// Results accumulate into the loop's accumulator rows (the bias sequencer initialized them).
// It waits, step by step, until this loop's load sequencers have sent all their mvins
// (ld_done_i), so that every compute enters dispatch after the loads it reads.
//
// Order, innermost first: pixel columns (DIM a time), rows, images, input channels (DIM a
// time), kernel columns (max_pixels_per_row a time), kernel rows, output channels.
module loop_conv_ex import systolic_pkg::*, loop_conv_pkg::*; #(
  parameter int  DIM      = 4,
  parameter int  SP_ROWS  = 256,
  parameter int  ACC_ROWS = 64,
  parameter int  LATENCY  = 2,
  localparam int SP_AW    = $clog2(SP_ROWS),
  localparam int ACC_AW   = $clog2(ACC_ROWS),
  localparam int LOG_DIM  = $clog2(DIM)
) (
  input  logic              clk_i,
  input  logic              rst_ni,
  // a loop to unroll: its slot, its input (A) start, weights (B) end, accumulator (C) start
  input  logic              req_valid_i,
  output logic              req_ready_o,
  input  logic              req_slot_i,
  input  logic [SP_AW-1:0]  req_a_i,
  input  logic [SP_AW:0]    req_b_end_i,
  input  logic [ACC_AW-1:0] req_c_i,
  // the fields of each loop slot (it keeps its loop's when it takes the loop)
  input  conv_cfg_t         cfgs_i [NLOOPS],
  input  conv_der_t         ders_i [NLOOPS],
  output logic              slot_o,
  output logic              idle_o,
  input  logic              ld_done_i,   // the load sequencers sent all of this loop's mvins
  // instructions out
  output logic              cmd_valid_o,
  input  logic              cmd_ready_i,
  output insn_t             cmd_o
);
  typedef enum logic [1:0] {Idle, Pre, Comp} state_e;

  state_e            state_q, state_d;
  /* verilator lint_off UNUSEDSIGNAL */   // it reads some of its loop's fields
  conv_cfg_t         cfg_q;
  conv_der_t         der_q;
  /* verilator lint_on UNUSEDSIGNAL */
  logic              slot_q, slot_d;
  logic [SP_AW-1:0]  a_q;
  logic [SP_AW:0]    b_end_q;
  logic [ACC_AW-1:0] c_q;
  logic              new_q, new_d;    // this block loads new weights
  it_t               och_q, och_d, krow_q, krow_d, kcol_q, kcol_d, kch_q, kch_d;
  it_t               b_q, b_d, orow_q, orow_d, ocol_q, ocol_d;

  logic  req_fire, in_valid, in_ready, in_fire, busy, it_en, last;
  insn_t insn;

  assign req_ready_o = state_q == Idle && !busy;
  assign req_fire    = req_valid_i && req_ready_o;
  assign in_valid    = state_q != Idle && ld_done_i;
  assign in_fire     = in_valid && in_ready;
  assign idle_o      = req_ready_o;
  assign slot_o      = slot_q;

  // the instruction of this step (evaluated only while the loop runs)
  always_comb begin
    it_t         rows, cols, k, irow, icol;
    logic [31:0] a_row, b_row, c_row;
    insn  = '0;
    rows  = '0;
    cols  = '0;
    k     = '0;
    irow  = '0;
    icol  = '0;
    a_row = '0;
    b_row = '0;
    c_row = '0;
    if (state_q != Idle) begin
      rows  = min_it(cfg_q.ocols - ocol_q, it_t'(DIM));
      cols  = min_it(cfg_q.ochs - och_q, it_t'(DIM));
      k     = it_t'(min_it(cfg_q.kcols - kcol_q, it_t'(cfg_q.max_pixels))
                    * min_it(cfg_q.kchs - kch_q, it_t'(DIM)));
      irow  = (orow_q * cfg_q.stride + krow_q * cfg_q.kernel_dilation) >> cfg_q.downsample;
      icol  = (ocol_q * cfg_q.stride + kcol_q * cfg_q.kernel_dilation) >> cfg_q.downsample;
      a_row = 32'(a_q) + 32'(kch_q >> LOG_DIM) * 32'(der_q.input_spad_stride)
              + 32'(b_q) * 32'(der_q.ipix) + 32'(irow) * 32'(der_q.ds_icols) + 32'(icol);
      b_row = 32'(b_end_q) - 32'(der_q.b_rows)
              + 32'(och_q >> LOG_DIM) * 32'(der_q.weight_spad_stride)
              + (32'(krow_q) * 32'(cfg_q.kcols) + 32'(kcol_q)) * 32'(cfg_q.kchs) + 32'(kch_q);
      c_row = 32'(c_q) + 32'(och_q >> LOG_DIM) * 32'(der_q.bias_spad_stride)
              + 32'(b_q) * 32'(der_q.opix) + 32'(orow_q) * 32'(cfg_q.ocols) + 32'(ocol_q);
    end
    if (state_q == Pre) begin
      insn = '{funct: FunctPreload,
               rs1: operand(k, cols, new_q ? sp_local(b_row) : GARBAGE_ADDR),
               rs2: operand(rows, cols, acc_local(c_row, 1'b1))};
    end else if (state_q == Comp) begin
      insn = '{funct: new_q ? FunctComputePreloaded : FunctComputeAccumulated,
               rs1: operand(rows, k, sp_local(a_row)),
               rs2: operand(rows, cols, GARBAGE_ADDR)};
    end
  end

  // next state: take a loop, or step through it (a preload, then its compute). The iterators'
  // next values read registers only; whether they are taken (in_fire, which waits on the
  // arbiter and dispatch's queues) is decided apart in a few narrow signals, so that a
  // simulation evaluates this logic only on the unit's own (gated) clock.
  always_comb begin
    logic pix_wrap, kch_wrap, kcol_wrap, krow_wrap;
    {ocol_d, orow_d, b_d, kch_d, kcol_d, krow_d, och_d} = '0;
    {pix_wrap, kch_wrap, kcol_wrap, krow_wrap} = '0;
    new_d = 1'b1;   // a new loop's first block loads its weights
    last  = 1'b0;
    if (!req_fire && state_q == Comp) begin
      ocol_d    = floor_add(ocol_q, it_t'(DIM), cfg_q.ocols, 1'b1);
      orow_d    = floor_add(orow_q, it_t'(1), cfg_q.orows, ocol_d == '0);
      b_d       = floor_add(b_q, it_t'(1), cfg_q.batches, ocol_d == '0 && orow_d == '0);
      pix_wrap  = ocol_d == '0 && orow_d == '0 && b_d == '0;   // the next block: new weights
      kch_d     = floor_add(kch_q, it_t'(DIM), cfg_q.kchs, pix_wrap);
      kch_wrap  = pix_wrap && kch_d == '0;
      kcol_d    = floor_add(kcol_q, it_t'(cfg_q.max_pixels), cfg_q.kcols, kch_wrap);
      kcol_wrap = kch_wrap && kcol_d == '0;
      krow_d    = floor_add(krow_q, it_t'(1), cfg_q.krows, kcol_wrap);
      krow_wrap = kcol_wrap && krow_d == '0;
      och_d     = floor_add(och_q, it_t'(DIM), cfg_q.ochs, krow_wrap);
      new_d     = pix_wrap;
      last      = krow_wrap && och_d == '0;
    end
  end
  assign slot_d = req_fire ? req_slot_i : slot_q;
  assign it_en  = req_fire || (in_fire && state_q == Comp);

  always_comb begin
    state_d = state_q;
    if (req_fire)                       state_d = Pre;
    else if (in_fire && state_q == Pre) state_d = Comp;
    else if (in_fire)                   state_d = last ? Idle : Pre;
  end

  loop_conv_pipe #(.LATENCY(LATENCY)) u_pipe (
    .clk_i, .rst_ni,
    .in_valid_i (in_valid), .in_ready_o (in_ready), .in_i (insn),
    .out_valid_o (cmd_valid_o), .out_ready_i (cmd_ready_i), .out_o (cmd_o),
    .busy_o (busy)
  );

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q <= Idle;
      slot_q  <= 1'b0;
    end else begin
      state_q <= state_d;
      slot_q  <= slot_d;
    end
  end

  always_ff @(posedge clk_i) begin
    if (req_fire) begin
      cfg_q   <= cfgs_i[req_slot_i];
      der_q   <= ders_i[req_slot_i];
      a_q     <= req_a_i;
      b_end_q <= req_b_end_i;
      c_q     <= req_c_i;
    end
    if (it_en) begin
      new_q  <= new_d;
      och_q  <= och_d;
      krow_q <= krow_d;
      kcol_q <= kcol_d;
      kch_q  <= kch_d;
      b_q    <= b_d;
      orow_q <= orow_d;
      ocol_q <= ocol_d;
    end
  end
endmodule
