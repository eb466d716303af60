// DIM x DIM weight-stationary mesh with input skew and output de-skew.
//
// A row presented at cycle t (in_valid_i, in_a_i, in_d_i, in_sel_i, in_tag_i)
// leaves at cycle t + 2*DIM - 1 as out_c_o[n] = in_d[n] + sum_k in_a[k] * W[k][n],
// with W the weight buffer in_sel_i names, and the same tag. Element k of A enters
// PE row k after k cycles, bias element n enters column n after n cycles; column n
// leaves the bottom at t + DIM + n and is delayed DIM - 1 - n more cycles.
// Weights are written one PE row per cycle (w_we_i, w_row_i, w_buf_i, w_data_i).
module mesh #(
  parameter int DIM   = 4,
  parameter int NBUF  = 3,
  parameter int TAG_W = 8
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  input  logic                   in_valid_i,
  input  logic [1:0]             in_sel_i,
  input  logic [DIM*8-1:0]       in_a_i,
  input  logic [DIM*32-1:0]      in_d_i,
  input  logic [TAG_W-1:0]       in_tag_i,
  input  logic                   w_we_i,
  input  logic [$clog2(DIM+1)-1:0] w_row_i,
  input  logic [1:0]             w_buf_i,
  input  logic [DIM*8-1:0]       w_data_i,
  output logic                   out_valid_o,
  output logic [TAG_W-1:0]       out_tag_o,
  output logic [DIM*32-1:0]      out_c_o,
  output logic                   active_o
);
  localparam int LAT = 2 * DIM - 1;

  // PE interconnect: a flows along rows (index n), psum down columns (index k)
  logic               a_v   [DIM][DIM+1];
  logic signed [7:0]  a_d   [DIM][DIM+1];
  logic [1:0]         a_s   [DIM][DIM+1];
  logic signed [31:0] ps    [DIM+1][DIM];

  // skew lines: row k of A is delayed k cycles, column n of D n cycles
  logic               askew_v_q [DIM][DIM];
  logic signed [7:0]  askew_q   [DIM][DIM];
  logic [1:0]         askew_s_q [DIM][DIM];
  logic signed [31:0] dskew_q   [DIM][DIM];
  // de-skew: column n delayed DIM-1-n cycles after it leaves the bottom row
  logic signed [31:0] oskew_q   [DIM][DIM];
  // tag and valid pipeline
  logic               tag_v_q [LAT];
  logic [TAG_W-1:0]   tag_q   [LAT];
  logic [$clog2(LAT+2)-1:0] inflight_q;
  logic               active;

  assign active   = in_valid_i || (inflight_q != '0);
  assign active_o = active;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      inflight_q <= '0;
      for (int i = 0; i < LAT; i++) tag_v_q[i] <= 1'b0;
      for (int k = 0; k < DIM; k++) begin
        for (int j = 0; j < DIM; j++) askew_v_q[k][j] <= 1'b0;
      end
    end else if (active) begin
      inflight_q <= inflight_q + (in_valid_i ? 1 : 0) - (tag_v_q[LAT-1] ? 1 : 0);
      tag_v_q[0] <= in_valid_i;
      for (int i = 1; i < LAT; i++) tag_v_q[i] <= tag_v_q[i-1];
      for (int k = 1; k < DIM; k++) begin
        askew_v_q[k][0] <= in_valid_i;
        for (int j = 1; j < k; j++) askew_v_q[k][j] <= askew_v_q[k][j-1];
      end
    end
  end

  always_ff @(posedge clk_i) begin
    if (active) begin
      tag_q[0] <= in_tag_i;
      for (int i = 1; i < LAT; i++) tag_q[i] <= tag_q[i-1];
      for (int k = 1; k < DIM; k++) begin
        askew_q[k][0]   <= in_a_i[k*8 +: 8];
        askew_s_q[k][0] <= in_sel_i;
        dskew_q[k][0]   <= in_d_i[k*32 +: 32];
        for (int j = 1; j < k; j++) begin
          askew_q[k][j]   <= askew_q[k][j-1];
          askew_s_q[k][j] <= askew_s_q[k][j-1];
          dskew_q[k][j]   <= dskew_q[k][j-1];
        end
      end
      for (int n = 0; n < DIM - 1; n++) begin
        oskew_q[n][0] <= ps[DIM][n];
        for (int j = 1; j < DIM - 1 - n; j++) oskew_q[n][j] <= oskew_q[n][j-1];
      end
    end
  end

  // mesh edges
  always_comb begin
    a_v[0][0] = in_valid_i;
    a_d[0][0] = in_a_i[7:0];
    a_s[0][0] = in_sel_i;
    ps[0][0]  = in_d_i[31:0];
    for (int k = 1; k < DIM; k++) begin
      a_v[k][0] = askew_v_q[k][k-1];
      a_d[k][0] = askew_q[k][k-1];
      a_s[k][0] = askew_s_q[k][k-1];
      ps[0][k]  = dskew_q[k][k-1];
    end
  end

  for (genvar k = 0; k < DIM; k++) begin : g_row
    for (genvar n = 0; n < DIM; n++) begin : g_col
      pe #(.NBUF(NBUF)) u_pe (
        .clk_i,
        .rst_ni,
        .a_valid_i (a_v[k][n]),
        .a_i       (a_d[k][n]),
        .sel_i     (a_s[k][n]),
        .psum_i    (ps[k][n]),
        .a_valid_o (a_v[k][n+1]),
        .a_o       (a_d[k][n+1]),
        .sel_o     (a_s[k][n+1]),
        .psum_o    (ps[k+1][n]),
        .w_we_i    (w_we_i && (w_row_i == ($clog2(DIM+1))'(k))),
        .w_buf_i   (w_buf_i),
        .w_i       (w_data_i[n*8 +: 8])
      );
    end
  end

  always_comb begin
    for (int n = 0; n < DIM - 1; n++) out_c_o[n*32 +: 32] = oskew_q[n][DIM-2-n];
    out_c_o[(DIM-1)*32 +: 32] = ps[DIM][DIM-1];
  end
  assign out_valid_o = tag_v_q[LAT-1];
  assign out_tag_o   = tag_q[LAT-1];
endmodule
