// A transfer sequencer of LoopMatmul: loads A, B or D (mvin, mvin2, mvin3), or stores C
// (mvout, through loop_mm_st). It takes one tile (xfer_req_t) at a time and walks it in
// block rows: each command moves DIM rows (fewer in the last block row, by pad_row) of up
// to max_blocks blocks (fewer at the tile's right edge; the last block column short by
// pad_col) between DRAM and the local memory, where block (row, col) sits at
// local_base + (row * max_col + col) * DIM and at DRAM byte
// dram_addr + ((row * dram_stride + col) * DIM * elem_bytes) mod 2^32.
//
// A command is offered while go_i (its unit's queue has room, and for the store, what it
// reads has been computed); a tile with dram_addr 0 is taken and skipped.
module loop_mm_xfer import systolic_pkg::*, loop_mm_pkg::*; #(
  parameter int DIM = 4
) (
  input  logic      clk_i,
  input  logic      rst_ni,
  // the next tile
  input  logic      req_valid_i,
  output logic      req_ready_o,
  input  xfer_req_t req_i,
  // the commands
  output logic      cmd_valid_o,
  input  logic      cmd_ready_i,
  output insn_t     cmd_o,
  input  logic      go_i,
  // where the walk is: idle, the tile's loop, the next block (outer and inner iterators),
  // and the blocks of the command offered now
  output logic      idle_o,
  output logic      loop_id_o,
  output iter_t     outer_o,
  output iter_t     inner_o,
  output iter_t     blocks_o
);
  localparam int DIM_W = $clog2(DIM);

  logic      active_q, active_d, req_fire, step, it_en, last, skip_q;
  xfer_req_t req_q;
  iter_t     outer_q, outer_d, inner_q, inner_d;

  // the block row the walk is at, and its command (computed while a tile is walked: idle, the
  // sequencer costs a simulation next to nothing). This and the iterators' next values read
  // registers only; the handshakes (go_i, cmd_ready_i) only decide whether they are taken,
  // in the few narrow signals after, so that a simulation evaluates the wide logic only on
  // the unit's own clock.
  iter_t       row, col, blocks;
  logic [15:0] rows, cols;
  logic [31:0] dram_off, blk_off;
  logic [28:0] local_row;
  always_comb begin
    row       = '0;
    col       = '0;
    blocks    = '0;
    cols      = '0;
    rows      = '0;
    blk_off   = '0;
    dram_off  = '0;
    local_row = '0;
    cmd_o     = '0;
    if (active_q) begin
      row    = req_q.inner_row ? inner_q : outer_q;
      col    = req_q.inner_row ? outer_q : inner_q;
      blocks = ({1'b0, col} + {1'b0, req_q.max_blocks} <= {1'b0, req_q.max_col})
             ? req_q.max_blocks : req_q.max_col - col;
      cols   = 16'(blocks * iter_t'(DIM))
             - (({1'b0, col} + {1'b0, blocks} >= {1'b0, req_q.max_col}) ? req_q.pad_col : '0);
      rows   = block_size(16'(DIM), row, req_q.max_row, req_q.pad_row);
      // offsets wrap at 32 bits, as Gemmini's castDramOffset
      blk_off   = 32'(row) * req_q.dram_stride[31:0] + 32'(col);
      dram_off  = (blk_off << DIM_W) << (req_q.elem32 ? 2 : 0);
      local_row = req_q.local_base[28:0]
                + ((29'(row) * 29'(req_q.max_col) + 29'(col)) << DIM_W);
      cmd_o       = '{funct: req_q.funct,
                      rs1:   req_q.dram_addr + WORD_W'(dram_off),
                      rs2:   operand_t'{rows: rows, cols: cols,
                                        addr: {req_q.local_base[31:29], local_row}}};
    end
    req_ready_o = !active_q;
    idle_o      = !active_q;
    loop_id_o   = req_q.loop_id;
    outer_o     = outer_q;
    inner_o     = inner_q;
    blocks_o    = blocks;
  end

  // the next block row (the inner iterator first; the walk ends when both wrap), or the
  // first of a new tile; the iterators take it when a command is taken or a tile arrives
  always_comb begin
    iter_t in_step, in_max, out_step, out_max;
    {in_step, in_max, out_step, out_max} = '0;
    inner_d = '0;
    outer_d = '0;
    last    = 1'b0;
    if (!req_fire && active_q) begin
      in_step  = req_q.inner_row ? iter_t'(1) : req_q.max_blocks;
      in_max   = req_q.inner_row ? req_q.max_row : req_q.max_col;
      out_step = req_q.inner_row ? req_q.max_blocks : iter_t'(1);
      out_max  = req_q.inner_row ? req_q.max_col : req_q.max_row;
      inner_d  = floor_add(inner_q, in_step, in_max, 1'b1);
      outer_d  = floor_add(outer_q, out_step, out_max, inner_d == '0);
      last     = inner_d == '0 && outer_d == '0;
    end
  end

  assign req_fire    = req_valid_i && req_ready_o;
  assign cmd_valid_o = active_q && go_i && !skip_q;
  assign step        = cmd_valid_o && cmd_ready_i;
  assign it_en       = req_fire || step;

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

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      inner_q <= '0;
      outer_q <= '0;
    end else if (it_en) begin
      inner_q <= inner_d;
      outer_q <= outer_d;
    end
  end

  // the tile, as it is taken (an enabled register: the wide copy happens only then), and
  // whether it is skipped (a zero DRAM address), decoded once
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      req_q  <= '0;
      skip_q <= 1'b1;
    end else if (req_fire) begin
      req_q  <= req_i;
      skip_q <= req_i.dram_addr == '0;
    end
  end

  // ---- assumptions ----------------------------------------------------------------
  // Checked at every clock edge out of reset (enabled from an always_ff with the registers'
  // asynchronous reset: rst_ni stays an asynchronous reset only).
`ifndef SYNTHESIS  // checks for simulation; synthesis (Yosys) elaborates none
  always_ff @(posedge clk_i or negedge rst_ni) begin : p_assumptions
    if (rst_ni) begin
      // a tile to walk has blocks, and pads shorter than a block
      if (req_fire && req_i.dram_addr != '0) begin
        assert (req_i.max_row != '0 && req_i.max_col != '0 && req_i.max_blocks != '0 &&
                req_i.max_blocks <= req_i.max_col &&
                req_i.pad_row < iter_t'(DIM) && req_i.pad_col < iter_t'(DIM))
          else $error("loop_mm_xfer: a tile with an empty bound or a pad of DIM or more");
      end
    end
  end
`endif
endmodule
