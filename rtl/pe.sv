// One processing element, weight- or output-stationary (os_i): the multiply-accumulate and its
// partial-sum register. The values that pass through a PE unchanged (A moving right with its
// valid bit and weight select, B moving down) and the weights are not held here: the mesh
// keeps the moving values as shift registers, one wide packed vector a PE row (A) or column
// (B), and the weights as one packed vector a PE row and buffer, and gives each PE its lane:
// its A value, its B value and the weight its A value's select picks. These arrive
// sign-extended to 32 bits, so the multiply-accumulate is one 32-bit multiply and add (the
// low 32 bits of the product of sign-extended int8 values are those of the int8 x int8
// product). No register here is reset: psum only ever moves for a valid A value or a shift.
//
// Weight-stationary: psum takes psum_i + a_i * w_i, the sum of the PE above plus the product.
// Output-stationary: psum takes psum_q + a_i * b_i, or on a shift (shift_i) psum_i, the sum of
// the PE above, which is how D enters and results leave. psum only moves when en_i (a valid
// A value, or an OS shift).
module pe (
  input  logic        clk_i,
  input  logic        os_i,
  input  logic        en_i,
  input  logic        shift_i,
  input  logic [31:0] a_i,
  input  logic [31:0] w_i,
  input  logic [31:0] b_i,
  input  logic [31:0] psum_i,
  output logic [31:0] psum_o
);
  logic [31:0] psum_q;

  // the multiply-accumulate: onto the sum from above (WS) or onto the PE's own (OS); the
  // next sum is formed only in the cycles it is taken
  always_ff @(posedge clk_i) begin
    if (en_i) begin
      if (!os_i)        psum_q <= psum_i + a_i * w_i;
      else if (shift_i) psum_q <= psum_i;
      else              psum_q <= psum_q + a_i * b_i;
    end
  end

  assign psum_o = psum_q;
endmodule
