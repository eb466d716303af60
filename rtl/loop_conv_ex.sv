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
//
// The training flags, as LoopConvExecute: wrot180 reads the kernel pixel rotated 180 degrees.
// trans_weight_0132's weights are stored a row per output channel (the preload's B transposed
// by the program's config_ex). trans_input_3120: a config_ex first (set_only_strides: A's rows,
// input channels, one image of pixels apart; C's, images, one image of outputs apart), then a
// block of DIM images per output pixel (A transposed by the program's config_ex).
// input_dilated: the scratchpad holds the undilated input; a block covers every other output
// column (C's rows c_stride = 2 apart, the program's config_ex) and a kernel pixel that meets a
// zero at an output pixel is passed (one cycle, no instruction).
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
  localparam int ADDR_W = 2 * SP_AW + 1 + ACC_AW;

  /* verilator lint_off UNUSEDSIGNAL */   // it reads some of its loop's fields
  conv_cfg_t         cfg;
  conv_der_t         der;
  /* verilator lint_on UNUSEDSIGNAL */
  logic [SP_AW-1:0]  a;
  logic [SP_AW:0]    b_end;
  logic [ACC_AW-1:0] c;
  // its iterators (their registers are the shell's)
  logic              new_q, new_d;    // this block loads new weights
  logic              cfg_q, cfg_d;    // the config_ex of a transposed input is still to send
  it_t               och_q, och_d, krow_q, krow_d, kcol_q, kcol_d, kch_q, kch_d;
  it_t               b_q, b_d, orow_q, orow_d, ocol_q, ocol_d;

  logic  req_fire, pre_st, comp_st, last, skip_it, again, pass;
  insn_t insn;

  // input_dilated: a kernel pixel that meets a zero between input pixels at this output pixel
  // (LoopConv's skip_iteration); the iterators pass it
  assign skip_it = cfg.input_dilated
                   && (((krow_q * cfg.kernel_dilation + orow_q + cfg.upad) & it_t'(1)) != '0
                       || ((kcol_q * cfg.kernel_dilation + ocol_q + cfg.lpad) & it_t'(1)) != '0);
  assign again   = pre_st && cfg_q;   // the config_ex, then the first preload
  assign pass    = pre_st && !cfg_q && skip_it;

  // the instruction of this step (evaluated only while the loop runs)
  // (over 40 lines: the operands' rows, their four addresses, and the transposes' shapes)
  always_comb begin
    it_t         rows, cols, k, irow, icol, krow_r, kcol_r;
    logic [31:0] a_row, b_row, c_row, b_at;
    {rows, cols, k, irow, icol, krow_r, kcol_r} = '0;
    {a_row, b_row, c_row, b_at} = '0;
    insn = '0;
    if (pre_st || comp_st) begin
      rows   = cfg.trans_input_3120 ? min_it(cfg.batches - b_q, it_t'(DIM))
             : undilated(min_it(cfg.ocols - ocol_q, it_t'(DIM) << cfg.input_dilated),
                         cfg.input_dilated);
      cols   = min_it(cfg.ochs - och_q, it_t'(DIM));
      k      = it_t'(min_it(cfg.kcols - kcol_q, it_t'(cfg.max_pixels))
                     * min_it(cfg.kchs - kch_q, it_t'(DIM)));
      irow   = undilated(orow_q * cfg.stride + krow_q * cfg.kernel_dilation, cfg.input_dilated)
               >> cfg.downsample;
      icol   = undilated(ocol_q * cfg.stride + kcol_q * cfg.kernel_dilation, cfg.input_dilated)
               >> cfg.downsample;
      krow_r = cfg.wrot180 ? cfg.krows - it_t'(1) - krow_q : krow_q;
      kcol_r = cfg.wrot180 ? cfg.kcols - it_t'(1) - kcol_q : kcol_q;
      a_row  = 32'(a) + 32'(irow) * 32'(der.ds_icols) + 32'(icol)
               + (cfg.trans_input_3120
                  ? 32'(b_q >> LOG_DIM) * 32'(der.input_spad_stride) + 32'(kch_q) * 32'(der.ipix)
                  : 32'(kch_q >> LOG_DIM) * 32'(der.input_spad_stride) + 32'(b_q) * 32'(der.ipix));
      b_row  = 32'(b_end) - 32'(der.b_rows)
               + (cfg.trans_weight_0132
                  ? 32'(kch_q >> LOG_DIM) * 32'(der.weight_spad_stride)
                    + (32'(krow_r) * 32'(cfg.kcols) + 32'(kcol_r)) * 32'(cfg.ochs) + 32'(och_q)
                  : 32'(och_q >> LOG_DIM) * 32'(der.weight_spad_stride)
                    + (32'(krow_r) * 32'(cfg.kcols) + 32'(kcol_r)) * 32'(cfg.kchs) + 32'(kch_q));
      c_row  = 32'(c) + 32'(och_q >> LOG_DIM) * 32'(der.bias_spad_stride)
               + 32'(b_q) * 32'(der.opix) + 32'(orow_q) * 32'(cfg.ocols) + 32'(ocol_q);
    end
    // a transposed operand's rows and columns are the stored ones
    if (again) begin
      insn = config_ex_strides(der.irows * der.icols, der.opix);
    end else if (pre_st) begin
      b_at = new_q ? sp_local(b_row) : GARBAGE_ADDR;
      insn = '{funct: FunctPreload,
               rs1: cfg.trans_weight_0132 ? operand(cols, k, b_at) : operand(k, cols, b_at),
               rs2: operand(rows, cols, acc_local(c_row, 1'b1))};
    end else if (comp_st) begin
      insn = '{funct: new_q ? FunctComputePreloaded : FunctComputeAccumulated,
               rs1: cfg.trans_input_3120 ? operand(k, rows, sp_local(a_row))
                                         : operand(rows, k, sp_local(a_row)),
               rs2: operand(rows, cols, GARBAGE_ADDR)};
    end
  end

  // the iterators' next values after a compute or a passed iteration (output columns one at a
  // time then, and with trans_input_3120, whose steps are DIM images of one pixel), whether it
  // is the loop's last; after the config_ex, the same ones
  always_comb begin
    logic pix_wrap, kch_wrap, kcol_wrap, krow_wrap;
    it_t  ocol_it;
    {ocol_d, orow_d, b_d, kch_d, kcol_d, krow_d, och_d} = '0;
    {pix_wrap, kch_wrap, kcol_wrap, krow_wrap} = '0;
    ocol_it = (pass || cfg.trans_input_3120) ? it_t'(1) : it_t'(DIM) << cfg.input_dilated;
    new_d   = 1'b1;   // a new loop's first block loads its weights
    cfg_d   = cfgs_i[req_slot_i].trans_input_3120;   // a transposed input's: config_ex first
    last    = 1'b0;
    if (!req_fire && again) begin
      {ocol_d, orow_d, b_d, kch_d, kcol_d, krow_d, och_d} =
        {ocol_q, orow_q, b_q, kch_q, kcol_q, krow_q, och_q};
      new_d = new_q;
      cfg_d = 1'b0;
    end else if (!req_fire && (comp_st || pass)) begin
      ocol_d    = floor_add(ocol_q, ocol_it, cfg.ocols, 1'b1);
      orow_d    = floor_add(orow_q, it_t'(1), cfg.orows, ocol_d == '0);
      b_d       = floor_add(b_q, cfg.trans_input_3120 ? it_t'(DIM) : it_t'(1), cfg.batches,
                            ocol_d == '0 && orow_d == '0);
      pix_wrap  = ocol_d == '0 && orow_d == '0 && b_d == '0;   // the next block: new weights
      kch_d     = floor_add(kch_q, it_t'(DIM), cfg.kchs, pix_wrap);
      kch_wrap  = pix_wrap && kch_d == '0;
      kcol_d    = floor_add(kcol_q, it_t'(cfg.max_pixels), cfg.kcols, kch_wrap);
      kcol_wrap = kch_wrap && kcol_d == '0;
      krow_d    = floor_add(krow_q, it_t'(1), cfg.krows, kcol_wrap);
      krow_wrap = kcol_wrap && krow_d == '0;
      och_d     = floor_add(och_q, it_t'(DIM), cfg.ochs, krow_wrap);
      new_d     = pix_wrap || (pass && new_q);   // a passed iteration loads nothing
      cfg_d     = 1'b0;
      last      = krow_wrap && och_d == '0;
    end
  end

  // Idle, then Pre (First) and Comp (Step) in turn; every loop has computes (no skip)
  loop_conv_seq #(.LATENCY(LATENCY), .ADDR_W(ADDR_W), .ITS_W(7 * IT_W + 2), .PAIRED(1)) u_seq (
    .clk_i, .rst_ni,
    .req_valid_i, .req_ready_o, .req_slot_i, .req_addr_i ({req_a_i, req_b_end_i, req_c_i}),
    .req_skip_i (1'b0), .req_fire_o (req_fire),
    .cfgs_i, .ders_i, .cfg_o (cfg), .der_o (der), .addr_o ({a, b_end, c}), .slot_o, .idle_o,
    .first_o (pre_st), .step_o (comp_st),
    .its_d_i ({cfg_d, new_d, och_d, krow_d, kcol_d, kch_d, b_d, orow_d, ocol_d}),
    .its_o ({cfg_q, new_q, och_q, krow_q, kcol_q, kch_q, b_q, orow_q, ocol_q}),
    .last_i (last), .again_i (again), .pass_i (pass), .go_i (ld_done_i), .insn_i (insn),
    .cmd_valid_o, .cmd_ready_i, .cmd_o
  );
endmodule
