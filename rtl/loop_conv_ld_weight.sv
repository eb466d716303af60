// LoopConv's weight sequencer (LdWeight): config_ld of mvin2, then one mvin2 per kernel pixel,
// block of DIM input channels and run of up to max_ochs output channels. The tile's weights
// end at the loop's B end (its scratchpad half's top, or the half b_spad_id names); each block
// of DIM output channels holds krows x kcols x kchs rows. Depthwise (dw): the kernel of one
// channel, kernel_dim x kernel_dim bytes from the weight address. A loop whose weight address
// is 0 loads nothing (its weights are resident). trans_weight_1203: the weights are
// [kch][krow][kcol][och] in DRAM. trans_weight_0132: [krow][kcol][och][kch]; each mvin2 moves up
// to max_ochs input channels (columns) of up to DIM output channels (rows), and the scratchpad
// holds them so (execute's preload reads them with config_ex's b_transpose): a block of DIM input
// channels holds krows x kcols x ochs rows.
//
// Order, innermost first: input channels (DIM a time; trans_weight_0132: max_ochs), kernel
// columns, kernel rows, output channels (max_ochs a time; trans_weight_0132: DIM).
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
  /* verilator lint_off UNUSEDSIGNAL */   // it reads some of its loop's fields
  conv_cfg_t      cfg;
  conv_der_t      der;
  /* verilator lint_on UNUSEDSIGNAL */
  logic [SP_AW:0] end_row;
  // its iterators (their registers are the shell's)
  it_t            och_q, och_d, krow_q, krow_d, kcol_q, kcol_d, kch_q, kch_d;

  logic  req_fire, config_st, load_st, last;
  it_t   max_och;   // output channels per mvin2 (trans_weight_0132: input channels)
  insn_t insn;

  assign max_och = min_it(cfg.trans_weight_0132 ? cfg.kchs : cfg.ochs, it_t'(MAX_BLOCK_LEN * DIM));

  // the DRAM offset of this step's weights, in the loop's layout (LoopConvLdWeight's order of
  // precedence: dw, trans_weight_1203, trans_weight_0132)
  /* verilator lint_off UNUSEDSIGNAL */   // it reads the layout's fields only
  function automatic logic [31:0] weight_offset(input conv_cfg_t c, input it_t och, input it_t krow,
                                                input it_t kcol, input it_t kch);
    logic [31:0] pix;
    pix = 32'(krow) * 32'(c.kernel_dim) + 32'(kcol);
    if (c.dw)                return pix;
    if (c.trans_weight_1203) return (32'(kch) * 32'(c.kernel_dim) * 32'(c.kernel_dim) + pix)
                                    * 32'(c.out_channels) + 32'(och);
    if (c.trans_weight_0132) return (pix * 32'(c.out_channels) + 32'(och)) * 32'(c.in_channels)
                                    + 32'(kch);
    return (pix * 32'(c.in_channels) + 32'(kch)) * 32'(c.weight_stride) + 32'(och);
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  // the instruction of this step (evaluated only while the loop runs)
  always_comb begin
    logic [31:0] row;
    logic [63:0] stride;
    it_t         ochs_n, kchs_n;   // output and input channels of this mvin2
    insn   = '0;
    row    = '0;
    stride = '0;
    ochs_n = '0;
    kchs_n = '0;
    if (config_st) begin
      stride = cfg.dw ? 64'd1
             : cfg.trans_weight_1203
             ? 64'(32'(cfg.kernel_dim) * 32'(cfg.kernel_dim) * 32'(cfg.out_channels))
             : cfg.trans_weight_0132 ? 64'(cfg.in_channels) : 64'(cfg.weight_stride);
      insn   = config_ld(2'd1, der.weight_spad_stride, 8'd1, stride);
    end else if (load_st) begin
      row = 32'(end_row) - 32'(der.b_rows)
            + (cfg.trans_weight_0132
               ? 32'(kch_q >> LOG_DIM) * 32'(der.weight_spad_stride)
                 + (32'(krow_q) * 32'(cfg.kcols) + 32'(kcol_q)) * 32'(cfg.ochs) + 32'(och_q)
               : 32'(och_q >> LOG_DIM) * 32'(der.weight_spad_stride)
                 + (32'(krow_q) * 32'(cfg.kcols) + 32'(kcol_q)) * 32'(cfg.kchs) + 32'(kch_q));
      ochs_n = min_it(cfg.ochs - och_q, cfg.trans_weight_0132 ? it_t'(DIM) : max_och);
      kchs_n = min_it(cfg.kchs - kch_q, cfg.trans_weight_0132 ? max_och : it_t'(DIM));
      insn = '{funct: FunctMvin2,
               rs1: cfg.weights_addr + 64'(weight_offset(cfg, och_q, krow_q, kcol_q, kch_q)),
               rs2: cfg.trans_weight_0132 ? operand(ochs_n, kchs_n, sp_local(row))
                                          : operand(kchs_n, ochs_n, sp_local(row))};
    end
  end

  // the iterators' next values, and whether this step is the loop's last
  always_comb begin
    och_d  = '0;
    krow_d = '0;
    kcol_d = '0;
    kch_d  = '0;
    last   = 1'b0;
    if (!req_fire && load_st) begin
      kch_d  = floor_add(kch_q, cfg.trans_weight_0132 ? max_och : it_t'(DIM), cfg.kchs, 1'b1);
      kcol_d = floor_add(kcol_q, it_t'(1), cfg.kcols, kch_d == '0);
      krow_d = floor_add(krow_q, it_t'(1), cfg.krows, kch_d == '0 && kcol_d == '0);
      och_d  = floor_add(och_q, cfg.trans_weight_0132 ? it_t'(DIM) : max_och, cfg.ochs,
                         kch_d == '0 && kcol_d == '0 && krow_d == '0);
      last   = och_d == '0 && krow_d == '0 && kcol_d == '0 && kch_d == '0;
    end
  end

  // Idle, Config (First), Load (Step); a loop without a weight address has nothing to load
  loop_conv_seq #(.LATENCY(LATENCY), .ADDR_W(SP_AW + 1), .ITS_W(4 * IT_W)) u_seq (
    .clk_i, .rst_ni,
    .req_valid_i, .req_ready_o, .req_slot_i, .req_addr_i,
    .req_skip_i (cfgs_i[req_slot_i].weights_addr == '0), .req_fire_o (req_fire),
    .cfgs_i, .ders_i, .cfg_o (cfg), .der_o (der), .addr_o (end_row), .slot_o, .idle_o,
    .first_o (config_st), .step_o (load_st),
    .its_d_i ({och_d, krow_d, kcol_d, kch_d}), .its_o ({och_q, krow_q, kcol_q, kch_q}),
    .last_i (last), .again_i (1'b0), .pass_i (1'b0), .go_i (!wait_i), .insn_i (insn),
    .cmd_valid_o, .cmd_ready_i, .cmd_o
  );
endmodule
