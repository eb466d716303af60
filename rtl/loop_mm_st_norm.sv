// The normalizing store walk of LoopMatmul: Gemmini's LoopMatmulStC in its ln_config / ln_st
// states (ucb-bar/gemmini 641fefb), for a loop whose act is LAYERNORM (2) or SOFTMAX (4). The
// loop's C tile leaves through the normalization unit a row at a time, as
// isa/loop_unroll._st_c_normalized issues it: per row block i, its rows NORM_STAT_IDS (2) at a
// time (ln_row), per pass of the act's three (running, final) command pairs
//   LAYERNORM: (SUM, MEAN), (VARIANCE, INV_STDDEV), (RESET, RESET)
//   SOFTMAX:   (MAX, MAX), (SUM_EXP, INV_SUM_EXP), (RESET, RESET)
// per stat id s of those rows (0, 1; fewer in a block's last odd row): a config_norm choosing s
// (set_stats_id_only), then the mvouts of row r = ln_row + s, one row each, across the block
// columns j in steps of max_blocks, each carrying the pass's running command but the row's last,
// which carries the final one. An mvout of row r at block column j reads accumulator row
// local_base + (i * max_col + j) * DIM + r and writes DRAM byte
// dram_addr + ((i * dram_stride + j) * DIM + r * dram_stride) (int8 C; mod 2^32, as Gemmini's
// castDramOffset); its columns are those of its blocks, less pad_col at the tile's right edge.
//
// A command is offered while go_i: the store queue has room and the execute sequencer is done
// with the loop (Gemmini's ex_ahead under LAYERNORM and SOFTMAX waits for ex_completed: a
// row's statistics need all its columns). A tile with dram_addr 0 is taken and skipped.
module loop_mm_st_norm import systolic_pkg::*, loop_mm_pkg::*; #(
  parameter int DIM = 4
) (
  input  logic      clk_i,
  input  logic      rst_ni,
  // the next tile (C's, as loop_mm_st's plain walk takes it) and its act's passes
  input  logic      req_valid_i,
  output logic      req_ready_o,
  input  xfer_req_t req_i,
  input  logic      softmax_i,   // SOFTMAX's passes (else LAYERNORM's)
  // the commands
  output logic      cmd_valid_o,
  input  logic      cmd_ready_i,
  output insn_t     cmd_o,
  input  logic      go_i,
  // idle, and the loop of the tile taken last
  output logic      idle_o,
  output logic      loop_id_o
);
  localparam int DIM_W = $clog2(DIM);
  localparam logic [15:0] NORM_STAT_IDS = 16'd2;   // LoopMatmulStC's NORM_STAT_IDS
  // isa.norm.NormCmd
  localparam logic [2:0] CmdReset = 3'd0, CmdSum = 3'd1, CmdMean = 3'd2, CmdVariance = 3'd3,
                         CmdInvStddev = 3'd4, CmdMax = 3'd5, CmdSumExp = 3'd6, CmdInvSumExp = 3'd7;

  logic      active_q, active_d, skip_q, softmax_q, cfg_q, cfg_d, req_fire, step, last;
  /* verilator lint_off UNUSEDSIGNAL */   // the walk's order and element size (checked below)
  xfer_req_t req_q;
  /* verilator lint_on UNUSEDSIGNAL */
  // the walk: row block, block column, first row of the stat ids' rows, pass, stat id
  iter_t     i_q, i_d, j_q, j_d, row_q, row_d;
  logic [1:0] pass_q, pass_d;
  logic      sid_q, sid_d;

  // the command the walk is at (read from registers only; nothing wide while idle)
  iter_t       blocks, rows, nsid, r;
  logic [15:0] cols;
  logic        final_blk;
  logic [2:0]  cmd;
  logic [31:0] dram_off;
  logic [25:0] local_row;   // bits 28:26 of the operand carry the norm command
  config_norm_rs1_t cn;
  always_comb begin
    blocks    = '0;
    rows      = '0;
    nsid      = '0;
    r         = '0;
    cols      = '0;
    final_blk = 1'b0;
    cmd       = CmdReset;
    dram_off  = '0;
    local_row = '0;
    cn        = '0;
    cmd_o     = '0;
    if (active_q) begin
      rows      = block_size(16'(DIM), i_q, req_q.max_row, req_q.pad_row);
      nsid      = (rows - row_q > NORM_STAT_IDS) ? NORM_STAT_IDS : rows - row_q;
      r         = row_q + iter_t'(sid_q);
      blocks    = ({1'b0, j_q} + {1'b0, req_q.max_blocks} <= {1'b0, req_q.max_col})
                ? req_q.max_blocks : req_q.max_col - j_q;
      cols      = 16'(blocks * iter_t'(DIM))
                - (({1'b0, j_q} + {1'b0, blocks} >= {1'b0, req_q.max_col}) ? req_q.pad_col : '0);
      final_blk = {1'b0, j_q} + {1'b0, req_q.max_blocks} >= {1'b0, req_q.max_col};
      unique case (pass_q)
        2'd0:    cmd = softmax_q ? CmdMax : (final_blk ? CmdMean : CmdSum);
        2'd1:    cmd = softmax_q ? (final_blk ? CmdInvSumExp : CmdSumExp)
                                 : (final_blk ? CmdInvStddev : CmdVariance);
        default: cmd = CmdReset;
      endcase
      // offsets wrap at 32 bits, as Gemmini's castDramOffset
      dram_off  = ((32'(i_q) * req_q.dram_stride[31:0] + 32'(j_q)) << DIM_W)
                + 32'(r) * req_q.dram_stride[31:0];
      local_row = req_q.local_base[25:0]
                + ((26'(i_q) * 26'(req_q.max_col) + 26'(j_q)) << DIM_W) + 26'(r);
      if (cfg_q) begin   // config_norm: the stat id only
        cn.kind              = ConfigNorm;
        cn.stat_id           = 8'(sid_q);
        cn.set_stats_id_only = 1'b1;
        cmd_o = '{funct: FunctConfig, rs1: cn, rs2: '0};
      end else begin
        cmd_o = '{funct: req_q.funct,
                  rs1:   req_q.dram_addr + WORD_W'(dram_off),
                  rs2:   operand_t'{rows: 16'd1, cols: cols,
                                    addr: {req_q.local_base[31:29], cmd, local_row}}};
      end
    end
    req_ready_o = !active_q;
    idle_o      = !active_q;
    loop_id_o   = req_q.loop_id;
  end

  // the next command: a config_norm is followed by its row's mvouts; after a row's last mvout,
  // the next stat id, pass, pair of rows and row block (Gemmini's floorAdd chain), each a
  // config_norm first; the walk ends when all wrap
  always_comb begin
    i_d    = i_q;
    j_d    = j_q;
    row_d  = row_q;
    pass_d = pass_q;
    sid_d  = sid_q;
    cfg_d  = cfg_q;
    last   = 1'b0;
    if (req_fire) begin
      {i_d, j_d, row_d, pass_d, sid_d} = '0;
      cfg_d = 1'b1;
    end else if (step && cfg_q) begin
      cfg_d = 1'b0;
    end else if (step) begin
      j_d = floor_add(j_q, req_q.max_blocks, req_q.max_col, 1'b1);
      if (j_d == '0) begin
        cfg_d = 1'b1;
        sid_d = (iter_t'(sid_q) + 1'b1 >= nsid) ? 1'b0 : 1'b1;
        if (!sid_d) begin
          pass_d = (pass_q == 2'd2) ? 2'd0 : pass_q + 2'd1;
          if (pass_d == '0) begin
            row_d = floor_add(row_q, NORM_STAT_IDS, rows, 1'b1);
            if (row_d == '0) begin
              i_d  = floor_add(i_q, 16'd1, req_q.max_row, 1'b1);
              last = i_d == '0;
            end
          end
        end
      end
    end
  end

  assign req_fire    = req_valid_i && req_ready_o;
  assign cmd_valid_o = active_q && go_i && !skip_q;
  assign step        = cmd_valid_o && cmd_ready_i;

  always_comb begin
    active_d = active_q;
    if (active_q && skip_q) active_d = 1'b0;
    else if (step)        active_d = !last;
    if (req_fire)         active_d = 1'b1;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      active_q <= 1'b0;
    end else begin
      active_q <= active_d;
    end
  end

  always_ff @(posedge clk_i) begin
    if (req_fire) begin
      req_q     <= req_i;
      skip_q    <= req_i.dram_addr == '0;
      softmax_q <= softmax_i;
    end
    i_q    <= i_d;
    j_q    <= j_d;
    row_q  <= row_d;
    pass_q <= pass_d;
    sid_q  <= sid_d;
    cfg_q  <= cfg_d;
  end

  // Checked at every clock edge out of reset (enabled from an always_ff with the registers'
  // asynchronous reset: rst_ni stays an asynchronous reset only).
`ifndef SYNTHESIS  // checks for simulation; synthesis (Yosys) elaborates none
  always_ff @(posedge clk_i or negedge rst_ni) begin : p_assumptions
    if (rst_ni) begin
      // a tile to walk has blocks, pads shorter than a block, int8 rows of the accumulator
      if (req_fire && req_i.dram_addr != '0) begin
        assert (req_i.max_row != '0 && req_i.max_col != '0 && req_i.max_blocks != '0 &&
                req_i.max_blocks <= req_i.max_col && req_i.pad_row < iter_t'(DIM) &&
                req_i.pad_col < iter_t'(DIM) && !req_i.elem32 && req_i.local_base[31:29] == 3'b100)
          else $error("loop_mm_st_norm: a tile with an empty bound, a pad of DIM or more, or .full");
      end
    end
  end
`endif
endmodule
