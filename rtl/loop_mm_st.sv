// The store sequencer of LoopMatmul: C's tile from the accumulator to DRAM (mvout), block
// row by block row (i inner, j outer in steps of max_blocks), through a transfer
// sequencer. An mvout of C's blocks (i, j .. j + blocks - 1) is offered once the execute
// sequencer has issued their last k: it is at k = max_k - 1 and past (j + blocks - 1, i)
// (j, then i, in order), or done with this loop. A resadd tile waits on B's loader instead
// (its (k, j) are C's (i, j)): past (i, j + blocks - 1), or done.
// A loop whose act is LAYERNORM or SOFTMAX is walked by loop_mm_st_norm instead (config_norm
// words and one-row mvouts with norm commands), once the execute sequencer (resadd: B's
// loader) is done with it; the other acts take the walk above, cycle for cycle.
module loop_mm_st import systolic_pkg::*, loop_mm_pkg::*; #(
  parameter int DIM = 4
) (
  input  logic    clk_i,
  input  logic    rst_ni,
  input  logic    req_valid_i,
  output logic    req_ready_o,
  input  st_req_t req_i,
  output logic    cmd_valid_o,
  input  logic    cmd_ready_i,
  output insn_t   cmd_o,
  input  logic    room_i,        // the store queue can take an mvout
  // what the mvouts wait on: the execute sequencer (resadd: B's loader) at (k, j, i), or
  // done with this loop
  input  iter_t   ex_k_i,
  input  iter_t   ex_j_i,
  input  iter_t   ex_i_i,
  input  logic    ex_done_i,
  output logic    idle_o,
  output logic    loop_id_o
);
  iter_t max_k_q, max_k_d;
  logic  resadd_q, resadd_d;
  iter_t i, j, blocks, last_j;
  logic  ahead;
  // the two walks: plain (loop_mm_xfer) and normalizing (loop_mm_st_norm); norm_q: the tile
  // taken last is the normalizing walk's
  logic  is_norm, norm_q, norm_d;
  logic  walk_valid, walk_ready, walk_idle, walk_loop, walk_cmd_valid;
  logic  nw_valid, nw_ready, nw_idle, nw_loop, nw_valid_cmd;
  insn_t walk_cmd, nw_cmd;

  assign is_norm = req_i.act == 3'd2 || req_i.act == 3'd4;

  always_comb begin
    last_j = '0;
    ahead  = 1'b0;
    if (!walk_idle) begin   // (a tile is walked)
      last_j = j + blocks - 1'b1;
      if (resadd_q) begin
        ahead = ex_done_i || ex_i_i > i || (ex_i_i == i && ex_j_i > last_j);
      end else begin
        ahead = ex_done_i || (ex_k_i == max_k_q - 1'b1 &&
                              (ex_j_i > last_j || (ex_j_i == last_j && ex_i_i > i)));
      end
    end
    max_k_d  = max_k_q;
    resadd_d = resadd_q;
    norm_d   = norm_q;
    if (req_valid_i && req_ready_o) begin
      max_k_d  = req_i.max_k;
      resadd_d = req_i.resadd;
      norm_d   = is_norm;
    end
  end

  // a tile goes to its walk while both are idle
  assign req_ready_o = walk_ready && nw_ready;
  assign walk_valid  = req_valid_i && !is_norm && nw_ready;
  assign nw_valid    = req_valid_i && is_norm && walk_ready;

  loop_mm_xfer #(.DIM(DIM)) u_walk (
    .clk_i, .rst_ni,
    .req_valid_i (walk_valid), .req_ready_o (walk_ready), .req_i (req_i.xfer),
    .cmd_valid_o (walk_cmd_valid), .cmd_ready_i, .cmd_o (walk_cmd), .go_i (room_i && ahead),
    .idle_o (walk_idle), .loop_id_o (walk_loop), .outer_o (j), .inner_o (i), .blocks_o (blocks)
  );

  loop_mm_st_norm #(.DIM(DIM)) u_norm_walk (
    .clk_i, .rst_ni,
    .req_valid_i (nw_valid), .req_ready_o (nw_ready), .req_i (req_i.xfer),
    .softmax_i (req_i.act == 3'd4),
    .cmd_valid_o (nw_valid_cmd), .cmd_ready_i, .cmd_o (nw_cmd), .go_i (room_i && ex_done_i),
    .idle_o (nw_idle), .loop_id_o (nw_loop)
  );

  // (one walk is active at a time: the other offers nothing)
  assign cmd_valid_o = walk_cmd_valid || nw_valid_cmd;
  assign cmd_o       = norm_q ? nw_cmd : walk_cmd;
  assign idle_o      = walk_idle && nw_idle;
  assign loop_id_o   = norm_q ? nw_loop : walk_loop;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      max_k_q  <= '0;
      resadd_q <= 1'b0;
      norm_q   <= 1'b0;
    end else begin
      max_k_q  <= max_k_d;
      resadd_q <= resadd_d;
      norm_q   <= norm_d;
    end
  end

  // Checked at every clock edge out of reset (enabled from an always_ff with the registers'
  // asynchronous reset: rst_ni stays an asynchronous reset only).
`ifndef SYNTHESIS  // checks for simulation; synthesis (Yosys) elaborates none
  always_ff @(posedge clk_i or negedge rst_ni) begin : p_assumptions
    if (rst_ni) begin
      if (req_valid_i && req_ready_o) begin
        assert (req_i.xfer.inner_row) else $error("loop_mm_st: C's tile is walked rows innermost");
      end
    end
  end
`endif
endmodule
