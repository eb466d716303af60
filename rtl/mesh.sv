// DIM x DIM mesh, weight- or output-stationary (os_i, held while rows are in flight),
// with input skew and output de-skew.
//
// Weight-stationary: a row presented at cycle t (in_valid_i, in_a_i, in_d_i, in_sel_i,
// in_tag_i) leaves at cycle t + 2*DIM - 1 as out_c_o[n] = in_d[n] + sum_k in_a[k] * W[k][n],
// with W the weight buffer in_sel_i names, and the same tag (out_valid_o, out_tag_o).
// Element k of A enters PE row k after k cycles, element n of D enters column n after
// n cycles; column n leaves the bottom at t + DIM + n and is delayed DIM - 1 - n more.
// Weights are written one PE row per cycle (w_we_i, w_row_i, w_buf_i, w_data_i), or with
// w_col_i one PE column (w_row_i names it), element k into row k: the weights transposed.
// Output-stationary: a row is a step of A and B (in_a_i a column of A, in_d_i[8n+:8] ...
// the low byte of each D lane, a row of B): PE (k, n) adds A[k] * B[n] to its sum, in
// cycle t + k + n. A shift row (in_shift_i) moves every column's sums one PE down, in
// column n at cycle t + n, D entering the top row and the bottom row leaving: de-skewed,
// it is out_c_o at t + DIM - 1 with os_out_valid_o and its tag. Shift rows must enter
// at least DIM cycles after the last step (its sums are complete by then). Every row
// also leaves at t + 2*DIM - 1 (out_valid_o), which retires it.
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
  input  logic [1:0]             in_sel_i,
  input  logic [DIM*8-1:0]       in_a_i,
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
  output logic                   os_out_valid_o,
  output logic [TAG_W-1:0]       os_out_tag_o,
  output logic                   active_o
);
  localparam int LAT = 2 * DIM - 1;

  // PE interconnect: a flows along rows (index n), psum down columns (index k)
  logic               a_v   [DIM][DIM+1];
  logic signed [7:0]  a_dat [DIM][DIM+1];
  logic [1:0]         a_s   [DIM][DIM+1];
  logic signed [31:0] ps    [DIM+1][DIM];
  logic signed [7:0]  bv    [DIM+1][DIM];   // OS: B moving down
  logic               sh    [DIM];          // OS: a shift row is in column n

  // Every delay line below is one packed register, stage 0 in its low bits: its next
  // value has each stage take the one below it and stage 0 the new input, and its top
  // stage is its output. The lines only move while the mesh is active; the valid bits and
  // the row count are reset, the data is not.
  // tag and valid pipeline, and the rows entered but not yet left
  logic [LAT-1:0]            tag_v_q, tag_v_d, tag_s_q, tag_s_d;
  logic [LAT-1:0][TAG_W-1:0] tag_q, tag_d;
  logic [$clog2(LAT+2)-1:0]  inflight_q, inflight_d;
  logic                      active;

  assign active   = in_valid_i || (inflight_q != '0);
  assign active_o = active;

  always_comb begin
    tag_v_d    = LAT'({tag_v_q, in_valid_i});
    tag_s_d    = LAT'({tag_s_q, in_valid_i && in_shift_i});
    tag_d      = (LAT*TAG_W)'({tag_q, in_tag_i});
    inflight_d = inflight_q + (in_valid_i ? 1 : 0) - (tag_v_q[LAT-1] ? 1 : 0);
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      tag_v_q    <= '0;
      tag_s_q    <= '0;
      inflight_q <= '0;
    end else if (active) begin
      tag_v_q    <= tag_v_d;
      tag_s_q    <= tag_s_d;
      inflight_q <= inflight_d;
    end
  end

  always_ff @(posedge clk_i) begin
    if (active) tag_q <= tag_d;
  end

  // skew lines: row k of A (valid, value, sel) enters PE row k after k cycles, D
  // element k (and a shift) enters column k after k cycles; row and column 0 enter
  // directly. A shift row carries no A.
  assign a_v[0][0]   = in_valid_i && !in_shift_i;
  assign a_dat[0][0] = in_a_i[7:0];
  assign a_s[0][0]   = in_sel_i;
  assign ps[0][0]    = in_d_i[31:0];
  assign sh[0]       = in_valid_i && in_shift_i;

  for (genvar k = 1; k < DIM; k++) begin : g_skew
    logic [k-1:0]    v_q, v_d, h_q, h_d;
    logic [k*8-1:0]  a_q, a_d;
    logic [k*2-1:0]  s_q, s_d;
    logic [k*32-1:0] d_q, d_d;

    always_comb begin
      v_d = (k)'({v_q, in_valid_i && !in_shift_i});
      h_d = (k)'({h_q, in_valid_i && in_shift_i});
      a_d = (k*8)'({a_q, in_a_i[k*8 +: 8]});
      s_d = (k*2)'({s_q, in_sel_i});
      d_d = (k*32)'({d_q, in_d_i[k*32 +: 32]});
    end

    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) begin
        v_q <= '0;
        h_q <= '0;
      end else if (active) begin
        v_q <= v_d;
        h_q <= h_d;
      end
    end

    always_ff @(posedge clk_i) begin
      if (active) begin
        a_q <= a_d;
        s_q <= s_d;
        d_q <= d_d;
      end
    end

    assign a_v[k][0]   = v_q[k-1];
    assign a_dat[k][0] = a_q[(k-1)*8 +: 8];
    assign a_s[k][0]   = s_q[(k-1)*2 +: 2];
    assign ps[0][k]    = d_q[(k-1)*32 +: 32];
    assign sh[k]       = h_q[k-1];
  end

  // OS: B enters the top row as the low byte of the skewed D lane
  for (genvar n = 0; n < DIM; n++) begin : g_b_top
    assign bv[0][n] = ps[0][n][7:0];
  end

  for (genvar k = 0; k < DIM; k++) begin : g_row
    for (genvar n = 0; n < DIM; n++) begin : g_col
      pe #(.NBUF(NBUF)) u_pe (
        .clk_i,
        .rst_ni,
        .os_i,
        .shift_i   (sh[n]),
        .a_valid_i (a_v[k][n]),
        .a_i       (a_dat[k][n]),
        .sel_i     (a_s[k][n]),
        .psum_i    (ps[k][n]),
        .b_i       (bv[k][n]),
        .a_valid_o (a_v[k][n+1]),
        .a_o       (a_dat[k][n+1]),
        .sel_o     (a_s[k][n+1]),
        .psum_o    (ps[k+1][n]),
        .b_o       (bv[k+1][n]),
        .w_we_i    (w_we_i && (w_row_i == ($clog2(DIM+1))'(w_col_i ? n : k))),
        .w_buf_i   (w_buf_i),
        .w_i       (w_col_i ? w_data_i[k*8 +: 8] : w_data_i[n*8 +: 8])
      );
    end
  end

  // de-skew: column n is delayed DIM-1-n cycles after it leaves the bottom row
  for (genvar n = 0; n < DIM - 1; n++) begin : g_deskew
    localparam int L = DIM - 1 - n;
    logic [L*32-1:0] c_q, c_d;

    always_comb begin
      c_d = (L*32)'({c_q, ps[DIM][n]});
    end

    always_ff @(posedge clk_i) begin
      if (active) c_q <= c_d;
    end

    assign out_c_o[n*32 +: 32] = c_q[(L-1)*32 +: 32];
  end
  assign out_c_o[(DIM-1)*32 +: 32] = ps[DIM][DIM-1];

  assign out_valid_o = tag_v_q[LAT-1];
  assign out_tag_o   = tag_q[LAT-1];

  // OS: a shift row's results are out_c_o DIM - 1 cycles after it entered
  if (DIM == 1) begin : g_os_out_now
    assign os_out_valid_o = in_valid_i && in_shift_i;
    assign os_out_tag_o   = in_tag_i;
  end else begin : g_os_out
    assign os_out_valid_o = tag_s_q[DIM-2];
    assign os_out_tag_o   = tag_q[DIM-2];
  end
endmodule
