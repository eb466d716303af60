// LoopConv's store sequencer (St): one mvout per block of up to DIM output pixels of one row
// and DIM channels, through config_st's scale and activation (set before the loop). It waits,
// step by step, until the execute sequencer has sent this loop's computes (ex_done_i). A loop
// whose output address is 0 stores nothing (its sums stay in the accumulator for the next loop).
// trans_output_1203: the output is [row][col][batch][och] in DRAM (the program's config_st stride
// steps from pixel to pixel).
//
// Order, innermost first: channels (DIM a time), pixel columns (DIM a time), rows, images.
//
// With pooling (no_pool = 0), as LoopConvSt: a config_st with the pooling fields, one pooling
// mvout per image and block of DIM channels (channels innermost), and a config_st without them.
// Then the row iterator counts these phases (PhasePre, PhasePool, PhasePost).
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
  /* verilator lint_off UNUSEDSIGNAL */   // it reads some of its loop's fields
  conv_cfg_t         cfg;
  conv_der_t         der;
  /* verilator lint_on UNUSEDSIGNAL */
  logic [ACC_AW-1:0] start;
  // its iterators (their registers are the shell's)
  it_t               b_q, b_d, orow_q, orow_d, ocol_q, ocol_d, och_q, och_d;

  localparam it_t PhasePre = it_t'(0), PhasePool = it_t'(1), PhasePost = it_t'(2);

  logic  req_fire, store_st, last;
  /* verilator lint_off UNUSEDSIGNAL */
  logic  no_first;   // it has no First state
  /* verilator lint_on UNUSEDSIGNAL */
  insn_t insn;

  // the instruction of this step (evaluated only while the loop runs)
  always_comb begin
    logic [31:0] row, offset;
    insn   = '0;
    row    = '0;
    offset = '0;
    if (store_st && !cfg.no_pool) begin
      row    = 32'(start) + 32'(och_q >> LOG_DIM) * 32'(der.bias_spad_stride) + 32'(b_q) * 32'(der.opix);
      offset = 32'(b_q) * 32'(cfg.pool_out_col_dim) * 32'(cfg.pool_out_row_dim) * 32'(cfg.out_stride)
               + 32'(och_q);
      insn   = (orow_q == PhasePool)
             ? '{funct: FunctMvout, rs1: cfg.output_addr + 64'(offset),
                 rs2: operand(it_t'(1), min_it(cfg.ochs - och_q, it_t'(DIM)), acc_local(row, 1'b0))}
             : config_st_pool(cfg, orow_q == PhasePre);
    end else if (store_st) begin
      row    = 32'(start) + 32'(och_q >> LOG_DIM) * 32'(der.bias_spad_stride)
               + 32'(b_q) * 32'(der.opix) + 32'(orow_q) * 32'(cfg.ocols) + 32'(ocol_q);
      offset = cfg.trans_output_1203
             ? ((32'(orow_q) * 32'(cfg.out_col_dim) + 32'(ocol_q)) * 32'(cfg.batch_size)
                + 32'(b_q)) * 32'(cfg.out_channels) + 32'(och_q)
             : ((32'(b_q) * 32'(cfg.out_row_dim) + 32'(orow_q)) * 32'(cfg.out_col_dim)
                + 32'(ocol_q)) * 32'(cfg.out_stride) + 32'(och_q);
      insn   = '{funct: FunctMvout, rs1: cfg.output_addr + 64'(offset),
                 rs2: operand(min_it(cfg.ocols - ocol_q, it_t'(DIM)),
                              min_it(cfg.ochs - och_q, it_t'(DIM)), acc_local(row, 1'b0))};
    end
  end

  // the iterators' next values, and whether this step is the loop's last
  always_comb begin
    b_d    = '0;
    orow_d = '0;
    ocol_d = '0;
    och_d  = '0;
    last   = 1'b0;
    if (!req_fire && store_st && !cfg.no_pool) begin
      och_d  = floor_add(och_q, it_t'(DIM), cfg.ochs, orow_q == PhasePool);
      b_d    = floor_add(b_q, it_t'(1), cfg.batches, orow_q == PhasePool && och_d == '0);
      orow_d = (orow_q == PhasePre || b_d != '0 || och_d != '0) ? PhasePool : PhasePost;
      last   = orow_q == PhasePost;
    end else if (!req_fire && store_st) begin
      och_d  = floor_add(och_q, it_t'(DIM), cfg.ochs, 1'b1);
      ocol_d = floor_add(ocol_q, it_t'(DIM), cfg.ocols, och_d == '0);
      orow_d = floor_add(orow_q, it_t'(1), cfg.orows, och_d == '0 && ocol_d == '0);
      b_d    = floor_add(b_q, it_t'(1), cfg.batches,
                         och_d == '0 && ocol_d == '0 && orow_d == '0);
      last   = b_d == '0 && orow_d == '0 && ocol_d == '0 && och_d == '0;
    end
  end

  // Idle, Store (Step: no config, set before the loop); a loop without an output address has
  // nothing to store
  loop_conv_seq #(.LATENCY(LATENCY), .ADDR_W(ACC_AW), .ITS_W(4 * IT_W), .NO_FIRST(1)) u_seq (
    .clk_i, .rst_ni,
    .req_valid_i, .req_ready_o, .req_slot_i, .req_addr_i,
    .req_skip_i (cfgs_i[req_slot_i].output_addr == '0), .req_fire_o (req_fire),
    .cfgs_i, .ders_i, .cfg_o (cfg), .der_o (der), .addr_o (start), .slot_o, .idle_o,
    .first_o (no_first), .step_o (store_st),
    .its_d_i ({b_d, orow_d, ocol_d, och_d}), .its_o ({b_q, orow_q, ocol_q, och_q}),
    .last_i (last), .again_i (1'b0), .pass_i (1'b0), .go_i (ex_done_i), .insn_i (insn),
    .cmd_valid_o, .cmd_ready_i, .cmd_o
  );
endmodule
