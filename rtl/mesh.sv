// DIM x DIM mesh, weight- or output-stationary (os_i, held while rows are in flight),
// with input skew and output de-skew.
//
// A row presented at cycle t (in_valid_i with its data and in_tag_i) reaches PE (k, n) at
// cycle t + k + n and leaves at t + 2*DIM - 1 as out_c_o with the same tag (out_valid_o).
// Element k of A enters PE row k after k cycles, elements n of D and B column n after n
// cycles; column n leaves the bottom at t + DIM + n and is delayed DIM - 1 - n more.
// Weight-stationary: out_c_o[n] = in_d[n] + sum_k in_a[k] * W[k][n], with W the weight
// buffer in_sel_i names. Weights are written one PE row per cycle (w_we_i, w_row_i, w_buf_i,
// w_data_i), or with w_col_i one PE column (w_row_i names it), element k into row k: the
// weights transposed.
// Output-stationary (Gemmini's double-buffered PEs): each PE holds two sums and a row names
// one (in_prop_i): PE (k, n) adds A[k] * B[n] to sum prop (in_a_i a column of A, in_b_i a row
// of B; zeros in a row that only shifts), and a shift row (in_shift_i) also moves sum !prop
// of every PE one PE down, D entering the top row and the bottom row's leaving: out_c_o of a
// shift row is the bottom PE row's sums !prop as they were before it. So a chain's results
// leave, and the next chain's D enters, in rows that compute on the other sums.
module mesh #(
  parameter int DIM   = 4,
  parameter int NBUF  = 3,
  parameter int TAG_W = 8
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  input  logic                   os_i,
  input  logic                   in_valid_i,
  input  logic                   in_shift_i,
  input  logic                   in_prop_i,
  input  logic [1:0]             in_sel_i,
  input  logic [DIM*8-1:0]       in_a_i,
  input  logic [DIM*8-1:0]       in_b_i,
  input  logic [DIM*32-1:0]      in_d_i,
  input  logic [TAG_W-1:0]       in_tag_i,
  input  logic                   w_we_i,
  input  logic [$clog2(DIM+1)-1:0] w_row_i,
  input  logic                   w_col_i,
  input  logic [1:0]             w_buf_i,
  input  logic [DIM*8-1:0]       w_data_i,
  output logic                   out_valid_o,
  output logic [TAG_W-1:0]       out_tag_o,
  output logic [DIM*32-1:0]      out_c_o,
  output logic                   active_o
);
  localparam int LAT = 2 * DIM - 1;

  // The mesh runs on a gated clock (clk_mesh) that ticks only while it is active (a row enters
  // or rows are in flight): in the other cycles no PE has a valid A value or a shift, so every
  // register would keep its value anyway. The PEs' weight-stationary sums tick only while it is
  // active in weight-stationary mode (clk_ws), the B lines (below) and the PEs' output-stationary
  // sums only while it is active in output-stationary mode (clk_b), the weights only in the cycles
  // a weight row or column is written.
  logic active, clk_mesh, clk_ws, clk_b, clk_w;

  clock_gate u_mesh_cg (.clk_i, .en_i (active),          .clk_o (clk_mesh));
  clock_gate u_ws_cg   (.clk_i, .en_i (active && !os_i), .clk_o (clk_ws));
  clock_gate u_b_cg    (.clk_i, .en_i (active && os_i),  .clk_o (clk_b));
  clock_gate u_w_cg    (.clk_i, .en_i (w_we_i),         .clk_o (clk_w));

  // The narrow delay lines below (valid bits, selects) are one packed register each, stage 0 in
  // its low bits: its next value has each stage take the one below it and stage 0 the new input,
  // and its top stage is its output. The wide values (tags, A, D, the results in the de-skew) are
  // delayed in rings instead: a ring's entry ptr_q - j holds the value written j ticks before, so
  // that a tick writes one entry where a delay line would move every stage (in a simulation, a
  // copy a stage and cycle). ptr_q moves on one entry a tick; a ring has 2**PW entries, which
  // covers the longest delay, 2*DIM-1 ticks (the tags'). The valid bits, the row count and the
  // pointer are reset, the data is not.
  localparam int PW = $clog2(2 * DIM);
  localparam int RING = 2 ** PW;
  logic [PW-1:0]             ptr_q;
  logic [LAT-1:0]            tag_v_q, tag_v_d;
  logic [TAG_W-1:0]          tag_q [RING];
  logic [$clog2(LAT+2)-1:0]  inflight_q, inflight_d;

  assign active   = in_valid_i || (inflight_q != '0);
  assign active_o = active;

  always_comb begin
    tag_v_d    = LAT'({tag_v_q, in_valid_i});
    inflight_d = inflight_q + (in_valid_i ? 1 : 0) - (tag_v_q[LAT-1] ? 1 : 0);
  end

  always_ff @(posedge clk_mesh or negedge rst_ni) begin
    if (!rst_ni) begin
      tag_v_q    <= '0;
      ptr_q      <= '0;
      inflight_q <= '0;
    end else begin
      tag_v_q    <= tag_v_d;
      ptr_q      <= ptr_q + 1'b1;
      inflight_q <= inflight_d;
    end
  end

  always_ff @(posedge clk_mesh) begin
    tag_q[ptr_q] <= in_tag_i;
  end

  // What enters PE row k (A: valid, select) and column n (D, and OS's B sign-extended), after the
  // input skew: row and column k enter k cycles after the row was presented, row and column 0
  // directly. The select is the weight buffer (WS) or the row's shift and prop bits (OS: {shift,
  // prop}), so they travel with A's valid bits on the same lines. A's values: g_ring below.
  logic        a_v   [DIM];
  logic [1:0]  a_s   [DIM];
  logic [31:0] d_in  [DIM];
  logic [31:0] b_in  [DIM];
  logic [1:0]  sel_in;

  assign sel_in   = os_i ? {in_shift_i, in_prop_i} : in_sel_i;
  assign a_v[0]   = in_valid_i;
  assign a_s[0]   = sel_in;
  assign d_in[0]  = in_d_i[31:0];
  assign b_in[0]  = 32'(signed'(in_b_i[7:0]));

  // A's values, sign-extended: row k's ring takes element k of each row presented, which PE (k, n)
  // uses k + n ticks later (the input skew's k and n PEs to its left); PE (0, 0) uses it directly.
  // D's: column k's ring (k >= 1) element k, which enters PE (0, k) k ticks later.
  logic [31:0] a0;

  assign a0 = 32'(signed'(in_a_i[7:0]));

  for (genvar k = 0; k < DIM; k++) begin : g_ring
    logic [31:0] a_q [RING];

    always_ff @(posedge clk_mesh) begin
      a_q[ptr_q] <= 32'(signed'(in_a_i[k*8 +: 8]));
    end
    if (k > 0) begin : g_d
      logic [31:0] d_q [RING];

      always_ff @(posedge clk_mesh) begin
        d_q[ptr_q] <= in_d_i[k*32 +: 32];
      end
      assign d_in[k] = d_q[ptr_q - PW'(k)];
    end
  end

  // Each PE column's B line (OS): lane k what PE (k, n) took, which PE (k+1, n) uses. It moves
  // one lane a cycle, on clk_b (output-stationary only: the mode does not change while rows are
  // in flight); its values only matter the cycle after they are taken.
  for (genvar n = 0; n < DIM; n++) begin : g_bline
    logic [DIM-1:0][31:0] b_q;

    always_ff @(posedge clk_b) begin
      b_q <= (DIM*32)'({b_q, b_in[n]});
    end
  end

  // The weights: PE row k's of buffer b are one packed vector (w_q[k][b]), lane n PE (k, n)'s,
  // sign-extended. A write (on clk_w) puts w_data_i into PE row w_row_i, or with w_col_i its lane k
  // into lane w_row_i of every row k (the weights transposed). There is one register per value of
  // the 2-bit select: those past NBUF-1 mirror buffer 0, which is what a select past NBUF-1 reads,
  // so a PE reads the one its select names without a range check. A write forms only the rows or
  // lanes it writes (one process, indexed by the write's row and lane).
  localparam int RIW = (DIM > 1) ? $clog2(DIM) : 1;   // a PE row or lane
  logic [DIM-1:0][31:0] w_q [DIM][4];

  function automatic logic [DIM-1:0][31:0] sext_row(input logic [DIM*8-1:0] x);
    logic [DIM-1:0][31:0] r;
    for (int n = 0; n < DIM; n++) r[n] = 32'(signed'(x[n*8 +: 8]));
    return r;
  endfunction

  always_ff @(posedge clk_w) begin
    for (int b = 0; b < 4; b++) begin
      if ((w_buf_i == 2'(b) || (w_buf_i == 2'd0 && b >= NBUF)) && 32'(w_row_i) < DIM) begin
        if (!w_col_i) begin
          w_q[RIW'(w_row_i)][b] <= sext_row(w_data_i);
        end else begin
          for (int k = 0; k < DIM; k++) w_q[k][b][RIW'(w_row_i)] <= 32'(signed'(w_data_i[k*8 +: 8]));
        end
      end
    end
  end

  // The registers below are in the order a simulation updates them in place: each after the
  // readers of its old value (PE row k reads row k-1, so the rows go bottom first; the rows read
  // the A lines, the lines the input skew) and each delay line's stages from the last. Verilator
  // keeps a register's next value aside, and copies it back, when a reader of the old value comes
  // after its update: in the packed, top-down form that was every PE sum and lane, each cycle
  // (now the bottom row, which the de-skew reads, and column 0).

  // the PEs: g_row[k].g_col[n].psum is the sum PE (k, n) holds (WS), which PE (k+1, n) adds to, and
  // .sh the shifting sum it passes down (OS), which PE (k+1, n) takes; row DIM-1's leave the bottom
  for (genvar k = DIM - 1; k >= 0; k--) begin : g_row
    for (genvar n = 0; n < DIM; n++) begin : g_col
      logic        v;
      logic [31:0] a, b, psum_in, psum, sh_in, sh;
      logic [1:0]  s;

      if (n == 0) begin : g_left
        assign v = a_v[k];
        assign s = a_s[k];
      end else begin : g_inner
        assign v = g_aline[k].v_q[n-1];
        assign s = g_aline[k].s_q[n-1];
      end
      if (k + n == 0) begin : g_first
        assign a = a0;
      end else begin : g_later
        assign a = g_ring[k].a_q[ptr_q - PW'(k + n)];
      end
      if (k == 0) begin : g_top
        assign b       = b_in[n];
        assign psum_in = d_in[n];
        assign sh_in   = d_in[n];
      end else begin : g_below
        assign b       = g_bline[n].b_q[k-1];
        assign psum_in = g_row[k-1].g_col[n].psum;
        assign sh_in   = g_row[k-1].g_col[n].sh;
      end

      pe u_pe (
        .clk_ws_i (clk_ws),
        .clk_os_i (clk_b),
        .en_i    (v),
        .shift_i (s[1]),
        .prop_i  (s[0]),
        .a_i     (a),
        .w_i     (w_q[k][s][n]),
        .b_i     (b),
        .psum_i  (psum_in),
        .sh_i    (sh_in),
        .psum_o  (psum),
        .sh_o    (sh)
      );
    end
  end

  // what leaves the bottom row: the mode's sums
  logic [31:0] bottom [DIM];
  for (genvar n = 0; n < DIM; n++) begin : g_bottom
    assign bottom[n] = os_i ? g_row[DIM-1].g_col[n].sh : g_row[DIM-1].g_col[n].psum;
  end

  // de-skew: column n is delayed DIM-1-n cycles after it leaves the bottom row (a ring a column)
  for (genvar n = 0; n < DIM - 1; n++) begin : g_deskew
    logic [31:0] c_q [RING];

    always_ff @(posedge clk_mesh) begin
      c_q[ptr_q] <= bottom[n];
    end

    assign out_c_o[n*32 +: 32] = c_q[ptr_q - PW'(DIM - 1 - n)];
  end
  assign out_c_o[(DIM-1)*32 +: 32] = bottom[DIM-1];

  // The valid bits and selects that pass through the PEs with A: PE row k's line, lane n what PE
  // (k, n) took last cycle, which PE (k, n+1) uses now; one packed word a row, shifted. (A's values
  // are in g_ring: PE (k, n+1) reads the one PE (k, n) read a tick before.)
  for (genvar k = 0; k < DIM; k++) begin : g_aline
    logic [DIM-1:0]       v_q;
    logic [DIM-1:0][1:0]  s_q;

    always_ff @(posedge clk_mesh or negedge rst_ni) begin
      if (!rst_ni) v_q <= '0;
      else         v_q <= DIM'({v_q, a_v[k]});
    end

    always_ff @(posedge clk_mesh) begin
      s_q <= (DIM*2)'({s_q, a_s[k]});
    end
  end

  // The input skew: row and column k (k >= 1) enter through k stages, stage 0 taking the input:
  // the valid bits and the selects one packed word a line, shifted, the B values one register a
  // stage (on clk_b: output-stationary only; A's and D's are in g_ring). The valid bits are reset,
  // the data is not.
  for (genvar k = 1; k < DIM; k++) begin : g_skew
    logic [k-1:0]   v_q;
    logic [k*2-1:0] s_q;

    always_ff @(posedge clk_mesh or negedge rst_ni) begin
      if (!rst_ni) v_q <= '0;
      else         v_q <= (k)'({v_q, in_valid_i});
    end

    always_ff @(posedge clk_mesh) begin
      s_q <= (k*2)'({s_q, sel_in});
    end

    for (genvar j = k - 1; j >= 0; j--) begin : g_st
      logic [7:0] b_q;

      if (j == 0) begin : g_first
        always_ff @(posedge clk_b) b_q <= in_b_i[k*8 +: 8];
      end else begin : g_next
        always_ff @(posedge clk_b) b_q <= g_st[j-1].b_q;
      end
    end

    assign a_v[k]  = v_q[k-1];
    assign a_s[k]  = s_q[(k-1)*2 +: 2];
    assign b_in[k] = 32'(signed'(g_st[k-1].b_q));
  end

  assign out_valid_o = tag_v_q[LAT-1];
  assign out_tag_o   = tag_q[ptr_q - PW'(LAT)];
endmodule
