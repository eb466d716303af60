// The execute sequencer of LoopMatmul: for each (k, j, i), i innermost, a preload of B's
// block (k, j) (the garbage address after i = 0: the weights stay) with C's block (i, j)
// as destination (accumulating after k = 0, or from k = 0 with accumulate), then a
// compute of A's block (i, k): compute_preloaded at i = 0, compute_accumulated after.
// Blocks are DIM x DIM, short by the pads in the last block row / column. A transposed
// operand's block is where its loader put it (A's at (k, i), B's at (j, k)), and its command
// names the stored rows and columns.
//
// A command is offered only when the loads it reads have been issued: A's loader is past
// block (k, i) and B's past (k, j) (their iterators are compared, (k, inner) in order), or
// done with this loop; D's loader is done with it. A resadd tile (skip) issues nothing.
module loop_mm_ex import systolic_pkg::*, loop_mm_pkg::*; #(
  parameter int DIM = 4
) (
  input  logic    clk_i,
  input  logic    rst_ni,
  input  logic    req_valid_i,
  output logic    req_ready_o,
  input  ex_req_t req_i,
  output logic    cmd_valid_o,
  input  logic    cmd_ready_i,
  output insn_t   cmd_o,
  input  logic    room_i,       // the execute queue can take a compute
  // the loaders: A at (ld_ka, ld_i), B at (ld_kb, ld_j); done with this loop (A, B, D)
  input  iter_t   ld_ka_i,
  input  iter_t   ld_i_i,
  input  iter_t   ld_kb_i,
  input  iter_t   ld_j_i,
  input  logic [2:0] ld_done_i,
  // where the walk is
  output logic    idle_o,
  output logic    loop_id_o,
  output iter_t   k_o,
  output iter_t   j_o,
  output iter_t   i_o
);
  localparam int DIM_W = $clog2(DIM);
  typedef enum logic [1:0] {ExIdle, ExPreload, ExCompute} state_e;

  state_e  state_q, state_d;
  ex_req_t req_q;
  logic    req_fire, step, it_en, last;
  iter_t   k_q, k_d, j_q, j_d, i_q, i_d;

  // the blocks of (k, j, i) and the command of this step (computed while a loop is walked).
  // This, the load test and the iterators' next values read registers only; the handshakes
  // (room_i, cmd_ready_i) only decide whether they are taken, in the few narrow signals
  // after, so that a simulation evaluates the wide logic only on the unit's own clock.
  logic [28:0] a_row, b_row, c_row;
  logic [15:0] a_cols, a_rows, b_cols, b_rows;
  logic [31:0] b_addr, c_addr;
  insn_t       step_cmd;
  always_comb begin
    iter_t ar, ac, am, br, bc, bm;
    {ar, ac, am, br, bc, bm} = '0;
    {a_row, b_row, c_row, a_cols, a_rows, b_cols, b_rows, b_addr, c_addr} = '0;
    step_cmd = '0;
    if (state_q == ExPreload) begin
      // B's block (k, j) (weights only at i = 0) and C's block (i, j)
      br     = req_q.b_transpose ? j_q : k_q;
      bc     = req_q.b_transpose ? k_q : j_q;
      bm     = req_q.b_transpose ? req_q.max_k : req_q.max_j;
      b_row  = req_q.b_row + ((29'(br) * 29'(bm) + 29'(bc)) << DIM_W);
      c_row  = req_q.c_row + ((29'(i_q) * 29'(req_q.max_j) + 29'(j_q)) << DIM_W);
      a_cols = block_size(16'(DIM), k_q, req_q.max_k, req_q.pad_k);
      a_rows = block_size(16'(DIM), i_q, req_q.max_i, req_q.pad_i);
      b_cols = block_size(16'(DIM), j_q, req_q.max_j, req_q.pad_j);
      b_rows = a_cols;
      b_addr = (i_q == '0) ? {3'b000, b_row} : GARBAGE_ADDR;
      c_addr = {1'b1, req_q.accumulate || k_q != '0, 1'b0, c_row};   // accumulator row
      // a transposed block's rows/cols are the stored ones (as config_ex's transpose reads it)
      step_cmd = '{funct: FunctPreload,
                   rs1:   req_q.b_transpose
                          ? operand_t'{rows: b_cols, cols: b_rows, addr: b_addr}
                          : operand_t'{rows: b_rows, cols: b_cols, addr: b_addr},
                   rs2:   operand_t'{rows: a_rows, cols: b_cols, addr: c_addr}};
    end else if (state_q == ExCompute) begin
      // A's block (i, k)
      ar     = req_q.a_transpose ? k_q : i_q;
      ac     = req_q.a_transpose ? i_q : k_q;
      am     = req_q.a_transpose ? req_q.max_i : req_q.max_k;
      a_row  = req_q.a_row + ((29'(ar) * 29'(am) + 29'(ac)) << DIM_W);
      a_cols = block_size(16'(DIM), k_q, req_q.max_k, req_q.pad_k);
      a_rows = block_size(16'(DIM), i_q, req_q.max_i, req_q.pad_i);
      step_cmd = '{funct: (i_q == '0) ? FunctComputePreloaded : FunctComputeAccumulated,
                   rs1:   req_q.a_transpose
                          ? operand_t'{rows: a_cols, cols: a_rows, addr: {3'b000, a_row}}
                          : operand_t'{rows: a_rows, cols: a_cols, addr: {3'b000, a_row}},
                   rs2:   operand_t'{rows: 16'(DIM), cols: 16'(DIM), addr: GARBAGE_ADDR}};
    end
  end

  // the loads this block reads have been issued ((k, inner) order, as the loaders walk).
  // B's test compares B's k (LoopMatmul compares A's there, which can let a compute pass
  // B's load while A's loader is at the same k).
  logic lda_ahead, ldb_ahead, ld_ahead;
  always_comb begin
    lda_ahead = 1'b0;
    ldb_ahead = 1'b0;
    ld_ahead  = 1'b0;
    if (state_q != ExIdle) begin
      lda_ahead = ld_done_i[0] || ld_ka_i > k_q || (ld_ka_i == k_q && ld_i_i > i_q);
      ldb_ahead = ld_done_i[1] || ld_kb_i > k_q || (ld_kb_i == k_q && ld_j_i > j_q);
      ld_ahead  = lda_ahead && ldb_ahead && ld_done_i[2] && !req_q.skip;
    end
    cmd_o       = step_cmd;
    req_ready_o = state_q == ExIdle;
    idle_o      = state_q == ExIdle;
    loop_id_o   = req_q.loop_id;
    k_o         = k_q;
    j_o         = j_q;
    i_o         = i_q;
  end

  // next (k, j, i) after a compute: i first, then j, then k; the walk ends when all three
  // wrap. The iterators take it when a compute is taken, or (0, 0, 0) when a loop arrives.
  always_comb begin
    i_d  = '0;
    j_d  = '0;
    k_d  = '0;
    last = 1'b0;
    if (!req_fire && state_q == ExCompute) begin
      i_d  = floor_add(i_q, iter_t'(1), req_q.max_i, 1'b1);
      j_d  = floor_add(j_q, iter_t'(1), req_q.max_j, i_d == '0);
      k_d  = floor_add(k_q, iter_t'(1), req_q.max_k, i_d == '0 && j_d == '0);
      last = i_d == '0 && j_d == '0 && k_d == '0;
    end
  end

  assign req_fire    = req_valid_i && req_ready_o;
  assign cmd_valid_o = ld_ahead && room_i;
  assign step        = cmd_valid_o && cmd_ready_i;
  assign it_en       = req_fire || (step && state_q == ExCompute);

  always_comb begin
    state_d = state_q;
    if (state_q != ExIdle && req_q.skip) state_d = ExIdle;
    else if (step)                       state_d = (state_q == ExPreload) ? ExCompute
                                                  : last ? ExIdle : ExPreload;
    if (req_fire)                        state_d = ExPreload;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q <= ExIdle;
    end else begin
      state_q <= state_d;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      k_q <= '0;
      j_q <= '0;
      i_q <= '0;
    end else if (it_en) begin
      k_q <= k_d;
      j_q <= j_d;
      i_q <= i_d;
    end
  end

  // the loop, as it is taken (an enabled register: the wide copy happens only then)
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      req_q <= '0;
    end else if (req_fire) begin
      req_q <= req_i;
    end
  end

  // ---- assumptions ----------------------------------------------------------------
  // Checked at every clock edge out of reset (enabled from an always_ff with the registers'
  // asynchronous reset: rst_ni stays an asynchronous reset only).
`ifndef SYNTHESIS  // checks for simulation; synthesis (Yosys) elaborates none
  always_ff @(posedge clk_i or negedge rst_ni) begin : p_assumptions
    if (rst_ni) begin
      // the mesh transposes one operand at most
      if (state_q != ExIdle) begin
        assert (!(req_q.a_transpose && req_q.b_transpose))
          else $error("loop_mm_ex: A and B both transposed");
      end
      // a loop to compute has blocks, and pads shorter than a block
      if (req_fire && !req_i.skip) begin
        assert (req_i.max_i != '0 && req_i.max_j != '0 && req_i.max_k != '0 &&
                req_i.pad_i < iter_t'(DIM) && req_i.pad_j < iter_t'(DIM) &&
                req_i.pad_k < iter_t'(DIM))
          else $error("loop_mm_ex: a loop with an empty bound or a pad of DIM or more");
      end
    end
  end
`endif
endmodule
