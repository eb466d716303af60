// One processing element, weight- or output-stationary (os_i).
//
// Weight-stationary: psum_o = psum_i + a_i * w[sel_i]. A values move right (a_o),
// partial sums move down (psum_o), both registered. Each PE holds NBUF weight
// registers so the next weights can be written while rows that use the current
// ones are still in flight; sel travels with the A value and picks the register.
// Output-stationary: the PE keeps its own sum in the psum register and adds
// a_i * b_i to it, B moving down (b_o) as A moves right; shift_i moves the sums
// one PE down the column instead (psum_i in, psum_o out), which is how D enters
// and results leave. Registers only update for a valid A value or a shift.
module pe #(
  parameter int NBUF = 3
) (
  input  logic                clk_i,
  input  logic                rst_ni,
  input  logic                os_i,
  input  logic                shift_i,
  input  logic                a_valid_i,
  input  logic signed [7:0]   a_i,
  input  logic [1:0]          sel_i,
  input  logic signed [31:0]  psum_i,
  input  logic signed [7:0]   b_i,
  output logic                a_valid_o,
  output logic signed [7:0]   a_o,
  output logic [1:0]          sel_o,
  output logic signed [31:0]  psum_o,
  output logic signed [7:0]   b_o,
  // weight write port
  input  logic                w_we_i,
  input  logic [1:0]          w_buf_i,
  input  logic signed [7:0]   w_i
);
  logic signed [7:0]  w_q [NBUF];
  logic signed [7:0]  a_q, b_q;
  logic signed [31:0] psum_q, psum_d;
  logic               valid_q;
  logic [1:0]         sel_q;
  logic signed [7:0]  w_sel, mul_b;
  logic signed [31:0] prod;

  // sel and the weight-buffer index are 2 bits wide
  if (NBUF < 1 || NBUF > 4) begin : g_param_check
    $error("pe: NBUF = %0d, but the 2-bit buffer select names 1 to 4 buffers", NBUF);
  end

  // the weight sel_i picks
  always_comb begin
    w_sel = w_q[0];
    for (int b = 1; b < NBUF; b++) begin
      if (sel_i == 2'(b)) w_sel = w_q[b];
    end
  end

  // the multiply-accumulate: onto the sum from above (WS) or onto the PE's own (OS)
  always_comb begin
    mul_b = os_i ? b_i : w_sel;
    prod  = 32'(a_i) * 32'(mul_b);
    if (!os_i)        psum_d = psum_i + prod;
    else if (shift_i) psum_d = psum_i;
    else              psum_d = psum_q + prod;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      valid_q <= 1'b0;
    end else begin
      valid_q <= a_valid_i;
    end
  end

  always_ff @(posedge clk_i) begin
    if (a_valid_i) begin
      a_q   <= a_i;
      sel_q <= sel_i;
      b_q   <= b_i;
    end
    if (a_valid_i || (os_i && shift_i)) psum_q <= psum_d;
    if (w_we_i) begin
      w_q[w_buf_i] <= w_i;
    end
  end

  assign a_valid_o = valid_q;
  assign a_o       = a_q;
  assign sel_o     = sel_q;
  assign psum_o    = psum_q;
  assign b_o       = b_q;
endmodule
