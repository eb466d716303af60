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
  typedef enum logic [1:0] {Idle, Config, Load} state_e;

  state_e            state_q, state_d;
  /* verilator lint_off UNUSEDSIGNAL */   // it reads some of its loop's fields
  conv_cfg_t         cfg_q;
  conv_der_t         der_q;
  /* verilator lint_on UNUSEDSIGNAL */
  logic              slot_q, slot_d;
  logic [ACC_AW-1:0] start_q, start_d;
  it_t               b_q, b_d, orow_q, orow_d, ocol_q, ocol_d, och_q, och_d;

  logic  skip, req_fire, in_valid, in_ready, in_fire, busy;
  insn_t insn;

  assign skip        = cfg_q.bias_addr == '0;
  assign req_ready_o = state_q == Idle && !busy;
  assign req_fire    = req_valid_i && req_ready_o;
  assign in_valid    = state_q != Idle && !wait_i && !skip;
  assign in_fire     = in_valid && in_ready;
  assign idle_o      = req_ready_o;
  assign slot_o      = slot_q;

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
    if (state_q == Config) begin
      insn = config_ld(2'd2, der_q.bias_spad_stride, 8'd1, '0);
    end else if (state_q == Load) begin
      max_och = min_it(cfg_q.ochs, it_t'(MAX_BLOCK_LEN_ACC * DIM));
      rows    = min_it(cfg_q.ocols - ocol_q, it_t'(DIM));
      cols    = min_it(cfg_q.ochs - och_q, max_och);
      row     = 32'(start_q) + 32'(och_q >> LOG_DIM) * 32'(der_q.bias_spad_stride)
                + 32'(b_q) * 32'(der_q.opix) + 32'(orow_q) * 32'(cfg_q.ocols) + 32'(ocol_q);
      dram    = cfg_q.no_bias ? '0 : cfg_q.bias_addr + 64'(32'(och_q) * 32'd4);
      insn    = '{funct: FunctMvin3, rs1: dram, rs2: operand(rows, cols, acc_local(row, 1'b0))};
    end
  end

  // next state: take a loop, or step through it
  always_comb begin
    it_t max_och, och_n, ocol_n, orow_n, b_n;
    state_d = state_q;
    slot_d  = slot_q;
    start_d = start_q;
    b_d     = b_q;
    orow_d  = orow_q;
    ocol_d  = ocol_q;
    och_d   = och_q;
    max_och = '0;
    och_n   = '0;
    ocol_n  = '0;
    orow_n  = '0;
    b_n     = '0;
    if (req_fire) begin
      state_d = Config;
      slot_d  = req_slot_i;
      start_d = req_addr_i;
      b_d     = '0;
      orow_d  = '0;
      ocol_d  = '0;
      och_d   = '0;
    end else if (state_q != Idle && skip) begin
      state_d = Idle;
    end else if (in_fire && state_q == Config) begin
      state_d = Load;
    end else if (in_fire) begin
      // the iterators' next values: only here, on the other cycles there is nothing to step
      max_och = min_it(cfg_q.ochs, it_t'(MAX_BLOCK_LEN_ACC * DIM));
      och_n   = floor_add(och_q, max_och, cfg_q.ochs, 1'b1);
      ocol_n  = floor_add(ocol_q, it_t'(DIM), cfg_q.ocols, och_n == '0);
      orow_n  = floor_add(orow_q, it_t'(1), cfg_q.orows, och_n == '0 && ocol_n == '0);
      b_n     = floor_add(b_q, it_t'(1), cfg_q.batches,
                          och_n == '0 && ocol_n == '0 && orow_n == '0);
      och_d  = och_n;
      ocol_d = ocol_n;
      orow_d = orow_n;
      b_d    = b_n;
      if (b_n == '0 && orow_n == '0 && ocol_n == '0 && och_n == '0) state_d = Idle;
    end
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
      cfg_q <= cfgs_i[req_slot_i];
      der_q <= ders_i[req_slot_i];
    end
    start_q <= start_d;
    b_q     <= b_d;
    orow_q  <= orow_d;
    ocol_q  <= ocol_d;
    och_q   <= och_d;
  end
endmodule
