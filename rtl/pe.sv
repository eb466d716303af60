// One processing element, weight- or output-stationary: the multiply-accumulate and its sum
// registers, each mode on its own clock (the mesh's, gated to that mode's cycles with rows in
// flight). The values that pass through a PE unchanged (A moving right with its valid bit and
// select, B moving down) and the weights are not held here: the mesh keeps A's values in a ring a
// PE row, B's in a shift register a PE column, and the weights as one packed vector a PE row and
// buffer, and gives each PE its lane: its A value, its B value and the weight its A value's select
// picks. These arrive sign-extended to 32 bits, so the
// multiply-accumulate is one 32-bit multiply and add (the low 32 bits of the product of
// sign-extended int8 values are those of the int8 x int8 product). No register here is reset.
//
// Weight-stationary (clk_ws_i): psum takes psum_i + a_i * w_i, the sum of the PE above plus the
// product, every cycle: a row that is not valid carries zero A values (the mesh's inputs are zero
// outside a row), and its sums are never read, so the PE needs no valid bit (a simulation then
// evaluates each PE as one multiply and add, without a branch).
// Output-stationary (clk_os_i), double-buffered as Gemmini's PE, for a valid row (en_i): two sums
// (c0, c1), the one prop_i names taking c + a_i * b_i (a row that only shifts carries zeros)
// while, on a shift (shift_i), the other takes sh_i and sh its old value: sh is the stage that
// carries the shifting sums down one PE a row, which is how D enters (at the top) and results
// leave (at the bottom) while the PEs compute.
module pe (
  input  logic        clk_ws_i,
  input  logic        clk_os_i,
  input  logic        en_i,
  input  logic        shift_i,
  input  logic        prop_i,
  input  logic [31:0] a_i,
  input  logic [31:0] w_i,
  input  logic [31:0] b_i,
  input  logic [31:0] psum_i,   // WS: the sum from above
  input  logic [31:0] sh_i,     // OS: the shifting sum from above
  output logic [31:0] psum_o,
  output logic [31:0] sh_o
);
  logic [31:0] psum_q, sh_q, c0_q, c1_q;

  always_ff @(posedge clk_ws_i) begin
    psum_q <= psum_i + a_i * w_i;
  end

  // OS: the multiply-accumulate onto the sum prop_i names, the other one shifting
  always_ff @(posedge clk_os_i) begin
    if (en_i) begin
      if (prop_i) begin
        c1_q <= c1_q + a_i * b_i;
        if (shift_i) begin
          c0_q <= sh_i;
          sh_q <= c0_q;
        end
      end else begin
        c0_q <= c0_q + a_i * b_i;
        if (shift_i) begin
          c1_q <= sh_i;
          sh_q <= c1_q;
        end
      end
    end
  end

  assign psum_o = psum_q;
  assign sh_o   = sh_q;
endmodule
