// LoopConv's store sequencer (St, without pooling): one mvout per block of up to DIM output
// pixels of one row and DIM channels, through config_st's scale and activation (set before
// the loop). It waits, step by step, until the execute sequencer has sent this loop's
// computes (ex_done_i). A loop whose output address is 0 stores nothing (its sums stay in
// the accumulator for the next loop).
//
// Order, innermost first: channels (DIM a time), pixel columns (DIM a time), rows, images.
module loop_conv_st import systolic_pkg::*, loop_conv_pkg::*; #(
  parameter int  DIM      = 4,
  parameter int  ACC_ROWS = 64,
  parameter int  LATENCY  = 2,
  localparam int ACC_AW   = $clog2(ACC_ROWS),
  localparam int LOG_DIM  = $clog2(DIM)
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
  input  logic              ex_done_i,   // the execute sequencer sent all of this loop's computes
  // instructions out
  output logic              cmd_valid_o,
  input  logic              cmd_ready_i,
  output insn_t             cmd_o
);
  typedef enum logic {Idle, Store} state_e;

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
  assign in_valid    = state_q != Idle && !skip_q && ex_done_i;
  assign in_fire     = in_valid && in_ready;
  assign idle_o      = req_ready_o;
  assign slot_o      = slot_q;

  // the instruction of this step (evaluated only while the loop runs)
  always_comb begin
    logic [31:0] row, offset;
    insn   = '0;
    row    = '0;
    offset = '0;
    if (state_q == Store) begin
      row    = 32'(start_q) + 32'(och_q >> LOG_DIM) * 32'(der_q.bias_spad_stride)
               + 32'(b_q) * 32'(der_q.opix) + 32'(orow_q) * 32'(cfg_q.ocols) + 32'(ocol_q);
      offset = ((32'(b_q) * 32'(cfg_q.out_row_dim) + 32'(orow_q)) * 32'(cfg_q.out_col_dim)
                + 32'(ocol_q)) * 32'(cfg_q.out_stride) + 32'(och_q);
      insn   = '{funct: FunctMvout, rs1: cfg_q.output_addr + 64'(offset),
                 rs2: operand(min_it(cfg_q.ocols - ocol_q, it_t'(DIM)),
                              min_it(cfg_q.ochs - och_q, it_t'(DIM)), acc_local(row, 1'b0))};
    end
  end

  // next state: take a loop, or step through it. The iterators' next values read registers
  // only; whether they are taken (in_fire, which waits on the arbiter and dispatch's queues)
  // is decided apart in a few narrow signals, so that a simulation evaluates this logic only
  // on the unit's own (gated) clock.
  always_comb begin
    b_d    = '0;
    orow_d = '0;
    ocol_d = '0;
    och_d  = '0;
    last   = 1'b0;
    if (!req_fire && state_q == Store) begin
      och_d  = floor_add(och_q, it_t'(DIM), cfg_q.ochs, 1'b1);
      ocol_d = floor_add(ocol_q, it_t'(DIM), cfg_q.ocols, och_d == '0);
      orow_d = floor_add(orow_q, it_t'(1), cfg_q.orows, och_d == '0 && ocol_d == '0);
      b_d    = floor_add(b_q, it_t'(1), cfg_q.batches,
                         och_d == '0 && ocol_d == '0 && orow_d == '0);
      last   = b_d == '0 && orow_d == '0 && ocol_d == '0 && och_d == '0;
    end
  end
  assign slot_d = req_fire ? req_slot_i : slot_q;
  assign it_en  = req_fire || in_fire;

  always_comb begin
    state_d = state_q;
    if (req_fire)                       state_d = Store;
    else if (state_q != Idle && skip_q) state_d = Idle;
    else if (in_fire && last)           state_d = Idle;
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
      skip_q  <= cfgs_i[req_slot_i].output_addr == '0;
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
