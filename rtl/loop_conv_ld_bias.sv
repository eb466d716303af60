// LoopConv's bias sequencer (LdBias): config_ld of mvin3, then one mvin3 per block of output
// pixels and channels: the bias row of the channels into each of the tile's accumulator rows
// (DRAM stride 0), or zeros with no_bias (DRAM address 0). A loop whose bias address is 0 has
// nothing to load (its accumulator rows hold partial sums of the previous loop).
//
// Order, innermost first: channels (max_ochs a time), pixel columns (DIM a time), rows, images.
module loop_conv_ld_bias import systolic_pkg::*, loop_conv_pkg::*; #(
  parameter int  DIM               = 4,
  parameter int  ACC_ROWS          = 64,
  parameter int  MAX_BLOCK_LEN_ACC = 1,
  parameter int  LATENCY           = 2,
  localparam int ACC_AW            = $clog2(ACC_ROWS),
  localparam int LOG_DIM           = $clog2(DIM)
) (
  input  logic              clk_i,
  input  logic              rst_ni,
  // a loop to unroll: its slot and its first accumulator row
  input  logic              req_valid_i,
  output logic              req_ready_o,
  input  logic              req_slot_i,
  input  logic [ACC_AW-1:0] req_addr_i,
  // the fields of each loop slot (it keeps its loop's when it takes the loop)
  input  conv_cfg_t         cfgs_i [NLOOPS],
  input  conv_der_t         ders_i [NLOOPS],
  output logic              slot_o,
  output logic              idle_o,
  input  logic              wait_i,     // hold: execute waits for the loads of an older loop
  // instructions out
  output logic              cmd_valid_o,
  input  logic              cmd_ready_i,
  output insn_t             cmd_o
);
  /* verilator lint_off UNUSEDSIGNAL */   // it reads some of its loop's fields
  conv_cfg_t         cfg;
  conv_der_t         der;
  /* verilator lint_on UNUSEDSIGNAL */
  logic [ACC_AW-1:0] start;
  // its iterators (their registers are the shell's)
  it_t               b_q, b_d, orow_q, orow_d, ocol_q, ocol_d, och_q, och_d;

  logic  req_fire, config_st, load_st, last;
  insn_t insn;

  // the instruction of this step (evaluated only while the loop runs)
  always_comb begin
    it_t         max_och, rows, cols;
    logic [31:0] row;
    logic [63:0] dram;
    insn    = '0;
    max_och = '0;
    rows    = '0;
    cols    = '0;
    row     = '0;
    dram    = '0;
    if (config_st) begin
      insn = config_ld(2'd2, der.bias_spad_stride, 8'd1, '0);
    end else if (load_st) begin
      max_och = min_it(cfg.ochs, it_t'(MAX_BLOCK_LEN_ACC * DIM));
      rows    = min_it(cfg.ocols - ocol_q, it_t'(DIM));
      cols    = min_it(cfg.ochs - och_q, max_och);
      row     = 32'(start) + 32'(och_q >> LOG_DIM) * 32'(der.bias_spad_stride)
                + 32'(b_q) * 32'(der.opix) + 32'(orow_q) * 32'(cfg.ocols) + 32'(ocol_q);
      dram    = cfg.no_bias ? '0 : cfg.bias_addr + 64'(32'(och_q) * 32'd4);
      insn    = '{funct: FunctMvin3, rs1: dram, rs2: operand(rows, cols, acc_local(row, 1'b0))};
    end
  end

  // the iterators' next values, and whether this step is the loop's last
  always_comb begin
    it_t max_och;
    max_och = '0;
    b_d     = '0;
    orow_d  = '0;
    ocol_d  = '0;
    och_d   = '0;
    last    = 1'b0;
    if (!req_fire && load_st) begin
      max_och = min_it(cfg.ochs, it_t'(MAX_BLOCK_LEN_ACC * DIM));
      och_d   = floor_add(och_q, max_och, cfg.ochs, 1'b1);
      ocol_d  = floor_add(ocol_q, it_t'(DIM), cfg.ocols, och_d == '0);
      orow_d  = floor_add(orow_q, it_t'(1), cfg.orows, och_d == '0 && ocol_d == '0);
      b_d     = floor_add(b_q, it_t'(1), cfg.batches,
                          och_d == '0 && ocol_d == '0 && orow_d == '0);
      last    = b_d == '0 && orow_d == '0 && ocol_d == '0 && och_d == '0;
    end
  end

  // Idle, Config (First), Load (Step); a loop without a bias address has nothing to load
  loop_conv_seq #(.LATENCY(LATENCY), .ADDR_W(ACC_AW), .ITS_W(4 * IT_W)) u_seq (
    .clk_i, .rst_ni,
    .req_valid_i, .req_ready_o, .req_slot_i, .req_addr_i,
    .req_skip_i (cfgs_i[req_slot_i].bias_addr == '0), .req_fire_o (req_fire),
    .cfgs_i, .ders_i, .cfg_o (cfg), .der_o (der), .addr_o (start), .slot_o, .idle_o,
    .first_o (config_st), .step_o (load_st),
    .its_d_i ({b_d, orow_d, ocol_d, och_d}), .its_o ({b_q, orow_q, ocol_q, och_q}),
    .last_i (last), .again_i (1'b0), .pass_i (1'b0), .go_i (!wait_i), .insn_i (insn),
    .cmd_valid_o, .cmd_ready_i, .cmd_o
  );
endmodule
