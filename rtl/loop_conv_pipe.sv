// The command pipeline of a LoopConv sequencer (Gemmini's Pipeline of `latency` stages): an
// instruction taken at in_* leaves at out_* LATENCY cycles later, one a cycle, each stage
// holding while the stage after it is full and stalled. busy_o: an instruction in the
// pipeline (one offered at in_* is the sender's to know).
module loop_conv_pipe import systolic_pkg::*; #(
  parameter int LATENCY = 2
) (
  input  logic  clk_i,
  input  logic  rst_ni,
  input  logic  in_valid_i,
  output logic  in_ready_o,
  input  insn_t in_i,
  output logic  out_valid_o,
  input  logic  out_ready_i,
  output insn_t out_o,
  output logic  busy_o
);
  if (LATENCY < 1) begin : g_param_check
    $error("loop_conv_pipe: LATENCY = %0d, at least one stage", LATENCY);
  end

  logic [LATENCY-1:0] valid_q, valid_d, stall;
  insn_t              stage_q [LATENCY];

  // a full stage stalls when the next one does (the last when its instruction is not taken)
  always_comb begin
    stall[LATENCY-1] = valid_q[LATENCY-1] && !out_ready_i;
    for (int i = LATENCY - 2; i >= 0; i--) stall[i] = valid_q[i] && stall[i+1];
  end

  assign in_ready_o  = !stall[0];
  assign out_valid_o = valid_q[LATENCY-1];
  assign out_o       = stage_q[LATENCY-1];
  assign busy_o      = valid_q != '0;

  always_comb begin
    // a stage empties when it moves on, then fills from the stage (or input) before it
    valid_d = valid_q;
    if (out_ready_i) valid_d[LATENCY-1] = 1'b0;
    for (int i = 0; i < LATENCY - 1; i++) begin
      if (!stall[i+1]) valid_d[i] = 1'b0;
    end
    for (int i = 0; i < LATENCY - 1; i++) begin
      if (valid_q[i]) valid_d[i+1] = 1'b1;
    end
    if (in_valid_i && in_ready_o) valid_d[0] = 1'b1;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      valid_q <= '0;
    end else begin
      valid_q <= valid_d;
    end
  end

  // a stage takes the one before it when that one is full and this one moves on
  always_ff @(posedge clk_i) begin
    if (in_valid_i && in_ready_o) stage_q[0] <= in_i;
    for (int i = 1; i < LATENCY; i++) begin
      if (valid_q[i-1] && !stall[i]) stage_q[i] <= stage_q[i-1];
    end
  end
endmodule
