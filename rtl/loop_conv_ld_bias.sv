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
  logic [ACC_AW-1:0] start_q;
  it_t               b_q, b_d, orow_q, orow_d, ocol_q, ocol_d, och_q, och_d;

  logic  skip_q, req_fire, in_valid, in_ready, in_fire, busy, it_en, last;
  insn_t insn;

  assign req_ready_o = state_q == Idle && !busy;
  assign req_fire    = req_valid_i && req_ready_o;
  assign in_valid    = state_q != Idle && !wait_i && !skip_q;
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

  // next state: take a loop, or step through it. The iterators' next values read registers
  // only; whether they are taken (in_fire, which waits on the arbiter and dispatch's queues)
  // is decided apart in a few narrow signals, so that a simulation evaluates this logic only
  // on the unit's own (gated) clock.
  always_comb begin
    it_t max_och;
    max_och = '0;
    b_d     = '0;
    orow_d  = '0;
    ocol_d  = '0;
    och_d   = '0;
    last    = 1'b0;
    if (!req_fire && state_q == Load) begin
      max_och = min_it(cfg_q.ochs, it_t'(MAX_BLOCK_LEN_ACC * DIM));
      och_d   = floor_add(och_q, max_och, cfg_q.ochs, 1'b1);
      ocol_d  = floor_add(ocol_q, it_t'(DIM), cfg_q.ocols, och_d == '0);
      orow_d  = floor_add(orow_q, it_t'(1), cfg_q.orows, och_d == '0 && ocol_d == '0);
      b_d     = floor_add(b_q, it_t'(1), cfg_q.batches,
                          och_d == '0 && ocol_d == '0 && orow_d == '0);
      last    = b_d == '0 && orow_d == '0 && ocol_d == '0 && och_d == '0;
    end
  end
  assign slot_d = req_fire ? req_slot_i : slot_q;
  assign it_en  = req_fire || (in_fire && state_q == Load);

  always_comb begin
    state_d = state_q;
    if (req_fire)                          state_d = Config;
    else if (state_q != Idle && skip_q)    state_d = Idle;
    else if (in_fire && state_q == Config) state_d = Load;
    else if (in_fire && last)              state_d = Idle;
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
      // a loop without this sequencer's DRAM address has nothing for it (decoded once)
      skip_q  <= cfgs_i[req_slot_i].bias_addr == '0;
      cfg_q   <= cfgs_i[req_slot_i];
      der_q   <= ders_i[req_slot_i];
      start_q <= req_addr_i;
    end
    if (it_en) begin
      b_q    <= b_d;
      orow_q <= orow_d;
      ocol_q <= ocol_d;
      och_q  <= och_d;
    end
  end
endmodule
