// LoopConv's weight sequencer (LdWeight): config_ld of mvin2, then one mvin2 per kernel pixel,
// block of DIM input channels and run of up to max_ochs output channels. The tile's weights
// end at the loop's B end (its scratchpad half's top, or the half b_spad_id names); each block
// of DIM output channels holds krows x kcols x kchs rows. Depthwise (dw): the kernel of one
// channel, kernel_dim x kernel_dim bytes from the weight address. A loop whose weight address
// is 0 loads nothing (its weights are resident).
//
// Order, innermost first: input channels (DIM a time), kernel columns, kernel rows, output
// channels (max_ochs a time).
module loop_conv_ld_weight import systolic_pkg::*, loop_conv_pkg::*; #(
  parameter int  DIM           = 4,
  parameter int  SP_ROWS       = 256,
  parameter int  MAX_BLOCK_LEN = 2,
  parameter int  LATENCY       = 2,
  localparam int SP_AW         = $clog2(SP_ROWS),
  localparam int LOG_DIM       = $clog2(DIM)
) (
  input  logic           clk_i,
  input  logic           rst_ni,
  // a loop to unroll: its slot and the scratchpad row past its weights
  input  logic           req_valid_i,
  output logic           req_ready_o,
  input  logic           req_slot_i,
  input  logic [SP_AW:0] req_addr_i,
  // the fields of each loop slot (it keeps its loop's when it takes the loop)
  input  conv_cfg_t      cfgs_i [NLOOPS],
  input  conv_der_t      ders_i [NLOOPS],
  output logic           slot_o,
  output logic           idle_o,
  input  logic           wait_i,     // hold: execute waits for the loads of an older loop
  // instructions out
  output logic           cmd_valid_o,
  input  logic           cmd_ready_i,
  output insn_t          cmd_o
);
  typedef enum logic [1:0] {Idle, Config, Load} state_e;

  state_e         state_q, state_d;
  /* verilator lint_off UNUSEDSIGNAL */   // it reads some of its loop's fields
  conv_cfg_t         cfg_q;
  conv_der_t         der_q;
  /* verilator lint_on UNUSEDSIGNAL */
  logic           slot_q, slot_d;
  logic [SP_AW:0] end_q;
  it_t            och_q, och_d, krow_q, krow_d, kcol_q, kcol_d, kch_q, kch_d;

  logic  skip_q, req_fire, in_valid, in_ready, in_fire, busy, it_en, last;
  it_t   max_och;   // output channels per mvin2
  insn_t insn;

  assign req_ready_o = state_q == Idle && !busy;
  assign req_fire    = req_valid_i && req_ready_o;
  assign in_valid    = state_q != Idle && !wait_i && !skip_q;
  assign in_fire     = in_valid && in_ready;
  assign idle_o      = req_ready_o;
  assign slot_o      = slot_q;
  assign max_och     = min_it(cfg_q.ochs, it_t'(MAX_BLOCK_LEN * DIM));

  // the instruction of this step (evaluated only while the loop runs)
  always_comb begin
    logic [31:0] row, offset;
    logic [63:0] stride;
    insn   = '0;
    row    = '0;
    offset = '0;
    stride = '0;
    if (state_q == Config) begin
      stride = cfg_q.dw ? 64'd1 : 64'(cfg_q.weight_stride);
      insn   = config_ld(2'd1, der_q.weight_spad_stride, 8'd1, stride);
    end else if (state_q == Load) begin
      row = 32'(end_q) - 32'(der_q.b_rows)
            + 32'(och_q >> LOG_DIM) * 32'(der_q.weight_spad_stride)
            + (32'(krow_q) * 32'(cfg_q.kcols) + 32'(kcol_q)) * 32'(cfg_q.kchs) + 32'(kch_q);
      if (cfg_q.dw) begin
        offset = 32'(krow_q) * 32'(cfg_q.kernel_dim) + 32'(kcol_q);
      end else begin
        offset = ((32'(krow_q) * 32'(cfg_q.kernel_dim) + 32'(kcol_q)) * 32'(cfg_q.in_channels)
                  + 32'(kch_q)) * 32'(cfg_q.weight_stride) + 32'(och_q);
      end
      insn = '{funct: FunctMvin2, rs1: cfg_q.weights_addr + 64'(offset),
               rs2: operand(min_it(cfg_q.kchs - kch_q, it_t'(DIM)),
                            min_it(cfg_q.ochs - och_q, max_och), sp_local(row))};
    end
  end

  // next state: take a loop, or step through it. The iterators' next values read registers
  // only; whether they are taken (in_fire, which waits on the arbiter and dispatch's queues)
  // is decided apart in a few narrow signals, so that a simulation evaluates this logic only
  // on the unit's own (gated) clock.
  always_comb begin
    och_d  = '0;
    krow_d = '0;
    kcol_d = '0;
    kch_d  = '0;
    last   = 1'b0;
    if (!req_fire && state_q == Load) begin
      kch_d  = floor_add(kch_q, it_t'(DIM), cfg_q.kchs, 1'b1);
      kcol_d = floor_add(kcol_q, it_t'(1), cfg_q.kcols, kch_d == '0);
      krow_d = floor_add(krow_q, it_t'(1), cfg_q.krows, kch_d == '0 && kcol_d == '0);
      och_d  = floor_add(och_q, max_och, cfg_q.ochs, kch_d == '0 && kcol_d == '0 && krow_d == '0);
      last   = och_d == '0 && krow_d == '0 && kcol_d == '0 && kch_d == '0;
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
      skip_q  <= cfgs_i[req_slot_i].weights_addr == '0;
      cfg_q <= cfgs_i[req_slot_i];
      der_q <= ders_i[req_slot_i];
      end_q <= req_addr_i;
    end
    if (it_en) begin
      och_q  <= och_d;
      krow_q <= krow_d;
      kcol_q <= kcol_d;
      kch_q  <= kch_d;
    end
  end
endmodule
