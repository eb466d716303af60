// One processing element, weight- or output-stationary (os_i): the multiply-accumulate and its
// sum registers. The values that pass through a PE unchanged (A moving right with its valid
// bit and select, B moving down) and the weights are not held here: the mesh keeps the moving
// values as shift registers, one wide packed vector a PE row (A) or column (B), and the
// weights as one packed vector a PE row and buffer, and gives each PE its lane: its A value,
// its B value and the weight its A value's select picks. These arrive sign-extended to 32
// bits, so the multiply-accumulate is one 32-bit multiply and add (the low 32 bits of the
// product of sign-extended int8 values are those of the int8 x int8 product). No register
// here is reset: each only ever moves for a row (en_i).
//
// Weight-stationary: psum takes psum_i + a_i * w_i, the sum of the PE above plus the product.
// Output-stationary, double-buffered as Gemmini's PE: two sums (c0, c1, on clk_os_i), the one
// prop_i names taking c + a_i * b_i (a row that only shifts carries zeros) while, on a shift
// (shift_i), the other takes psum_i and psum its old value: psum is the stage that carries the
// shifting sums down one PE a row, which is how D enters (at the top) and results leave (at the
// bottom) while the PEs compute.
module pe (
  input  logic        clk_i,
  input  logic        clk_os_i,   // ticks only in output-stationary mode: the two sums' clock
  input  logic        os_i,
  input  logic        en_i,
  input  logic        shift_i,
  input  logic        prop_i,
  input  logic [31:0] a_i,
  input  logic [31:0] w_i,
  input  logic [31:0] b_i,
  input  logic [31:0] psum_i,
  output logic [31:0] psum_o
);
  logic [31:0] psum_q, c0_q, c1_q;

  // the multiply-accumulate onto the sum from above (WS), or the stage that takes the shifting
  // sum's old value (OS); formed only in the cycles it is taken
  always_ff @(posedge clk_i) begin
    if (en_i) begin
      if (!os_i)        psum_q <= psum_i + a_i * w_i;
      else if (shift_i) psum_q <= prop_i ? c0_q : c1_q;
    end
  end

  // OS: the multiply-accumulate onto the sum prop_i names, the other one shifting
  always_ff @(posedge clk_os_i) begin
    if (en_i && os_i) begin
      if (prop_i) begin
        c1_q <= c1_q + a_i * b_i;
        if (shift_i) c0_q <= psum_i;
      end else begin
        c0_q <= c0_q + a_i * b_i;
        if (shift_i) c1_q <= psum_i;
      end
    end
  end

  assign psum_o = psum_q;
endmodule
