// A clock gate, as a standard integrated clock-gating cell (lowRISC's prim_clock_gating): a
// latch, open while the clock is low, holds the enable, and the gated clock is the clock ANDed
// with it. clk_o has the rising edges of clk_i in the cycles whose en_i was high just before
// the edge; en_i may change while clk_i is high without a glitch on clk_o.
//
// A unit on a gated clock keeps its registers in the cycles it is not enabled, as a unit whose
// next state equals its state would; a simulation skips its logic in those cycles.
module clock_gate (
  input  logic clk_i,
  input  logic en_i,
  output logic clk_o
);
  logic en_q;

  always_latch begin
    if (!clk_i) en_q = en_i;
  end

  assign clk_o = clk_i & en_q;
endmodule
