// LoopConv's input sequencer (LdInput): config_ld of mvin (pixel_repeats = max_pixels_per_row),
// then one mvin per run of up to DIM input pixels of one row and up to max_ichs channels.
// Pixels in the padding (row or column outside the unpadded tile) load zeros: an mvin from
// DRAM address 0. With downsample every other row and column is loaded (the DRAM stride and
// the run length doubled, the rows halved). A loop whose input address is 0 loads nothing.
// input_dilated: the undilated pixels and padding (der's). trans_input_3120: the input is
// [ich][row][col][batch] in DRAM, and each mvin moves up to max_ich images (columns) of one
// channel (a row per pixel); the scratchpad holds a block of images per block stride.
//
// Order, innermost first: channels (trans_input_3120: one a step), pixel columns (from -lpad),
// rows (from -upad), images (trans_input_3120: max_ich a step).
module loop_conv_ld_input import systolic_pkg::*, loop_conv_pkg::*; #(
  parameter int  DIM           = 4,
  parameter int  SP_ROWS       = 256,
  parameter int  MAX_BLOCK_LEN = 2,
  parameter int  LATENCY       = 2,
  localparam int SP_AW         = $clog2(SP_ROWS),
  localparam int LOG_DIM       = $clog2(DIM)
) (
  input  logic             clk_i,
  input  logic             rst_ni,
  // a loop to unroll: its slot and its first scratchpad row
  input  logic             req_valid_i,
  output logic             req_ready_o,
  input  logic             req_slot_i,
  input  logic [SP_AW-1:0] req_addr_i,
  // the fields of each loop slot (it keeps its loop's when it takes the loop)
  input  conv_cfg_t        cfgs_i [NLOOPS],
  input  conv_der_t        ders_i [NLOOPS],
  output logic             slot_o,
  output logic             idle_o,
  input  logic             wait_i,     // hold: execute waits for the loads of an older loop
  // instructions out
  output logic             cmd_valid_o,
  input  logic             cmd_ready_i,
  output insn_t            cmd_o
);
  /* verilator lint_off UNUSEDSIGNAL */   // it reads some of its loop's fields
  conv_cfg_t        cfg;
  conv_der_t        der;
  /* verilator lint_on UNUSEDSIGNAL */
  logic [SP_AW-1:0] start;
  // its iterators (their registers are the shell's)
  it_t              b_q, b_d, ich_q, ich_d;
  sit_t             irow_q, irow_d, icol_q, icol_d;   // from -upad and -lpad

  logic  req_fire, config_st, load_st, last;
  it_t   max_ich;    // channels (trans_input_3120: images) per mvin
  sit_t  run;        // pixels of this step (its columns before downsampling)
  insn_t insn;

  assign max_ich = min_it(cfg.trans_input_3120 ? cfg.batches : cfg.kchs,
                          it_t'(MAX_BLOCK_LEN * DIM));

  // pixels of this step: the left padding, the right padding or the image, to a run's end
  always_comb begin
    sit_t unpadded, full, dim_s;
    unpadded = sit_t'(der.icols_unpadded);
    dim_s    = sit_t'(DIM);
    full     = dim_s <<< cfg.downsample;
    if (!load_st) begin
      run = '0;
    end else if (icol_q < 0) begin
      run = (-icol_q > dim_s) ? dim_s : -icol_q;
    end else if (icol_q >= unpadded) begin
      run = (unpadded + sit_t'(der.rpad) - icol_q > dim_s) ? dim_s
            : unpadded + sit_t'(der.rpad) - icol_q;
    end else begin
      run = (unpadded - icol_q > full) ? full : unpadded - icol_q;
    end
  end

  // the instruction of this step (evaluated only while the loop runs)
  // (over 40 lines: the config_ld, and the mvin's row, DRAM address and size in both layouts)
  always_comb begin
    logic        zeros, tr;
    logic [31:0] row, pix, offset;
    it_t         prow, pcol, chans;
    logic [63:0] dram;
    insn   = '0;
    zeros  = 1'b0;
    row    = '0;
    pix    = '0;
    offset = '0;
    prow   = '0;
    pcol   = '0;
    chans  = '0;
    dram   = '0;
    tr     = cfg.trans_input_3120;
    if (config_st) begin
      insn = config_ld(2'd0, der.input_spad_stride, cfg.max_pixels,
                       64'(tr ? cfg.batch_size : cfg.in_stride) << cfg.downsample);
    end else if (load_st) begin
      zeros  = irow_q < 0 || irow_q >= sit_t'(der.irows_unpadded)
               || icol_q < 0 || icol_q >= sit_t'(der.icols_unpadded);
      prow   = it_t'(irow_q + sit_t'(der.upad)) >> cfg.downsample;   // padded row, column
      pcol   = it_t'(icol_q + sit_t'(der.lpad)) >> cfg.downsample;
      row    = 32'(start) + 32'(prow) * 32'(der.ds_icols) + 32'(pcol)
               + (tr ? 32'(b_q >> LOG_DIM) * 32'(der.input_spad_stride)
                       + 32'(ich_q) * 32'(der.ipix)
                     : 32'(ich_q >> LOG_DIM) * 32'(der.input_spad_stride)
                       + 32'(b_q) * 32'(der.ipix));
      if (tr) begin   // (the layout's batch_size, where LoopConv multiplies by the tile's batches)
        pix    = (32'(ich_q) * 32'(cfg.in_row_dim) + 32'(irow_q)) * 32'(cfg.in_col_dim)
                 + 32'(icol_q);
        offset = pix * 32'(cfg.batch_size) + 32'(b_q);
      end else begin
        pix    = (32'(b_q) * 32'(cfg.in_row_dim) + 32'(irow_q)) * 32'(cfg.in_col_dim)
                 + 32'(icol_q);
        offset = pix * 32'(cfg.in_stride) + 32'(ich_q);
      end
      dram   = zeros ? '0 : cfg.input_addr + 64'(offset);
      chans  = tr ? min_it(cfg.batches - b_q, max_ich) : min_it(cfg.kchs - ich_q, max_ich);
      insn   = '{funct: FunctMvin, rs1: dram,
                 rs2: operand(it_t'(run) >> cfg.downsample, chans, sp_local(row))};
    end
  end

  // the iterators' next values, and whether this step is the loop's last
  always_comb begin
    it_t  ich_n, b_n;
    sit_t icol_n, irow_n, lo_col, lo_row;
    logic col_wrap, row_wrap;
    b_d      = b_q;
    irow_d   = irow_q;
    icol_d   = icol_q;
    ich_d    = ich_q;
    lo_col   = -sit_t'(der.lpad);
    lo_row   = -sit_t'(der.upad);
    ich_n    = '0;
    icol_n   = '0;
    irow_n   = '0;
    col_wrap = 1'b0;
    row_wrap = 1'b0;
    b_n      = '0;
    last     = 1'b0;
    if (req_fire) begin
      b_d   = '0;
      ich_d = '0;   // irow and icol start in the Config step, from the new loop's fields
    end else if (config_st) begin
      // the first step starts in the padding; the fields are the new loop's by now
      irow_d = lo_row;
      icol_d = lo_col;
    end else if (load_st) begin
      ich_n    = floor_add(ich_q, cfg.trans_input_3120 ? it_t'(1) : max_ich, cfg.kchs, 1'b1);
      icol_n   = sfloor_add(icol_q, run, sit_t'(der.icols_unpadded) + sit_t'(der.rpad),
                            lo_col, ich_n == '0);
      col_wrap = ich_n == '0 && icol_n == lo_col;
      irow_n   = sfloor_add(irow_q, sit_t'(1) <<< cfg.downsample,
                            sit_t'(der.irows_unpadded) + sit_t'(der.dpad), lo_row, col_wrap);
      row_wrap = col_wrap && irow_n == lo_row;
      b_n      = floor_add(b_q, cfg.trans_input_3120 ? max_ich : it_t'(1), cfg.batches, row_wrap);
      ich_d    = ich_n;
      icol_d   = icol_n;
      irow_d   = irow_n;
      b_d      = b_n;
      last     = row_wrap && b_n == '0;
    end
  end

  // Idle, Config (First: the iterators take the padding's starts), Load (Step); a loop without
  // an input address has nothing to load
  loop_conv_seq #(.LATENCY(LATENCY), .ADDR_W(SP_AW), .ITS_W(2 * IT_W + 2 * $bits(sit_t)),
                  .FIRST_ITS(1)) u_seq (
    .clk_i, .rst_ni,
    .req_valid_i, .req_ready_o, .req_slot_i, .req_addr_i,
    .req_skip_i (cfgs_i[req_slot_i].input_addr == '0), .req_fire_o (req_fire),
    .cfgs_i, .ders_i, .cfg_o (cfg), .der_o (der), .addr_o (start), .slot_o, .idle_o,
    .first_o (config_st), .step_o (load_st),
    .its_d_i ({b_d, irow_d, icol_d, ich_d}), .its_o ({b_q, irow_q, icol_q, ich_q}),
    .last_i (last), .again_i (1'b0), .pass_i (1'b0), .go_i (!wait_i), .insn_i (insn),
    .cmd_valid_o, .cmd_ready_i, .cmd_o
  );
endmodule
