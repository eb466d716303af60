// The store sequencer of LoopMatmul: C's tile from the accumulator to DRAM (mvout), block
// row by block row (i inner, j outer in steps of max_blocks), through a transfer
// sequencer. An mvout of C's blocks (i, j .. j + blocks - 1) is offered once the execute
// sequencer has issued their last k: it is at k = max_k - 1 and past (j + blocks - 1, i)
// (j, then i, in order), or done with this loop. A resadd tile waits on B's loader instead
// (its (k, j) are C's (i, j)): past (i, j + blocks - 1), or done.
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

  always_comb begin
    last_j = '0;
    ahead  = 1'b0;
    if (!idle_o) begin   // (a tile is walked)
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
    if (req_valid_i && req_ready_o) begin
      max_k_d  = req_i.max_k;
      resadd_d = req_i.resadd;
    end
  end

  loop_mm_xfer #(.DIM(DIM)) u_walk (
    .clk_i, .rst_ni,
    .req_valid_i, .req_ready_o, .req_i (req_i.xfer),
    .cmd_valid_o, .cmd_ready_i, .cmd_o, .go_i (room_i && ahead),
    .idle_o, .loop_id_o, .outer_o (j), .inner_o (i), .blocks_o (blocks)
  );

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      max_k_q  <= '0;
      resadd_q <= 1'b0;
    end else begin
      max_k_q  <= max_k_d;
      resadd_q <= resadd_d;
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
