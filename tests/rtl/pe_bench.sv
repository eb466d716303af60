// The PE as the mesh clocks it: its OS sums' clock the same clock (the mesh gates it to the
// output-stationary cycles), so that the bench drives one clock.
module pe_bench (
  input  logic        clk_i,
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
  pe u_pe (.clk_i, .clk_os_i (clk_i), .os_i, .en_i, .shift_i, .prop_i, .a_i, .w_i, .b_i, .psum_i, .psum_o);
endmodule
