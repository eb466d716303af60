// The shell of a LoopConv sequencer: it takes a loop (latching its slot's fields, the addresses
// its request carries and whether it has nothing to do), steps through it, and sends each
// step's instruction through the command pipeline. A sequencer around it keeps what is its
// own: its iterators' next values (its_d_i, the shell holds them), when its loop ends (last_i),
// when a loop has nothing for it (req_skip_i) and the instruction of a step (insn_i).
//
// States: Idle, then First (the config_ld, or execute's preload) unless NO_FIRST, then Step,
// one a taken instruction (execute's compute goes back to First, PAIRED). A loop that skips
// goes back to Idle without sending anything. Execute's First may also repeat: after its
// config_ex (again_i), and on an iteration that sends nothing (pass_i: input dilation's skipped
// kernel pixels), whose iterators move on at once (back to Idle if it was the last). The
// iterators take its_d_i when a loop is taken, on each taken Step instruction, on those two and,
// with FIRST_ITS, in each cycle of First (LdInput: its padding starts from the loop's fields). The next values read the sequencer's registers only;
// whether they are taken (in_fire, which waits on the arbiter and dispatch's queues) is decided
// here apart, in a few narrow signals, so that a simulation evaluates the sequencer's logic only
// on the unit's own (gated) clock.
module loop_conv_seq import systolic_pkg::*, loop_conv_pkg::*; #(
  parameter int LATENCY   = 2,
  parameter int ADDR_W    = 8,    // the local addresses a request carries
  parameter int ITS_W     = 64,   // the iterators, packed
  parameter bit NO_FIRST  = 0,    // no First state: a loop starts with its steps
  parameter bit PAIRED    = 0,    // each Step goes back to First (a preload before each compute)
  parameter bit FIRST_ITS = 0     // the iterators also take its_d_i in First
) (
  input  logic              clk_i,
  input  logic              rst_ni,
  // a loop to unroll: its slot, its addresses, and whether it has nothing for this sequencer
  input  logic              req_valid_i,
  output logic              req_ready_o,
  input  logic              req_slot_i,
  input  logic [ADDR_W-1:0] req_addr_i,
  input  logic              req_skip_i,
  output logic              req_fire_o,
  // the fields of each loop slot, and those of the loop taken
  input  conv_cfg_t         cfgs_i [NLOOPS],
  input  conv_der_t         ders_i [NLOOPS],
  output conv_cfg_t         cfg_o,
  output conv_der_t         der_o,
  output logic [ADDR_W-1:0] addr_o,
  output logic              slot_o,
  output logic              idle_o,
  // where the loop is, and its iterators
  output logic              first_o,    // in First (its instruction is insn_i)
  output logic              step_o,     // in Step
  input  logic [ITS_W-1:0]  its_d_i,
  output logic [ITS_W-1:0]  its_o,
  input  logic              last_i,     // this Step (or passed First) is the loop's last
  input  logic              again_i,    // First's instruction is followed by another First
  input  logic              pass_i,     // First sends nothing: its iterators move on
  input  logic              go_i,       // the instruction may go (the sequencer's wait)
  input  insn_t             insn_i,
  // instructions out
  output logic              cmd_valid_o,
  input  logic              cmd_ready_i,
  output insn_t             cmd_o
);
  typedef enum logic [1:0] {Idle, First, Step} state_e;

  state_e            state_q, state_d;
  conv_cfg_t         cfg_q;
  conv_der_t         der_q;
  logic              slot_q, slot_d;
  logic [ADDR_W-1:0] addr_q;
  logic [ITS_W-1:0]  its_q;

  logic skip_q, req_fire, in_valid, in_ready, in_fire, busy, it_en, pass_fire;

  assign req_ready_o = state_q == Idle && !busy;
  assign req_fire    = req_valid_i && req_ready_o;
  assign in_valid    = state_q != Idle && go_i && !skip_q && !(state_q == First && pass_i);
  assign pass_fire   = state_q == First && pass_i && !skip_q;
  assign in_fire     = in_valid && in_ready;
  assign req_fire_o  = req_fire;
  assign idle_o      = req_ready_o;
  assign slot_o      = slot_q;
  assign cfg_o       = cfg_q;
  assign der_o       = der_q;
  assign addr_o      = addr_q;
  assign first_o     = state_q == First;
  assign step_o      = state_q == Step;
  assign its_o       = its_q;

  // whether the iterators take their next values (apart from what those are)
  assign slot_d = req_fire ? req_slot_i : slot_q;
  assign it_en  = req_fire || (FIRST_ITS && state_q == First && !skip_q)
                  || (in_fire && (state_q == Step || again_i)) || pass_fire;

  always_comb begin
    state_d = state_q;
    if (req_fire)                         state_d = NO_FIRST ? Step : First;
    else if (state_q != Idle && skip_q)   state_d = Idle;
    else if (pass_fire)                   state_d = last_i ? Idle : First;
    else if (in_fire && state_q == First) state_d = again_i ? First : Step;
    else if (in_fire && last_i)           state_d = Idle;
    else if (in_fire && PAIRED)           state_d = First;
  end

  loop_conv_pipe #(.LATENCY(LATENCY)) u_pipe (
    .clk_i, .rst_ni,
    .in_valid_i (in_valid), .in_ready_o (in_ready), .in_i (insn_i),
    .out_valid_o (cmd_valid_o), .out_ready_i (cmd_ready_i), .out_o (cmd_o),
    .busy_o (busy)
  );

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q <= Idle;
      slot_q  <= 1'b0;
    end else begin
      state_q <= state_d;
      slot_q  <= slot_d;
    end
  end

  always_ff @(posedge clk_i) begin
    if (req_fire) begin
      skip_q <= req_skip_i;   // decided once, from the new loop's fields
      cfg_q  <= cfgs_i[req_slot_i];
      der_q  <= ders_i[req_slot_i];
      addr_q <= req_addr_i;
    end
    if (it_en) its_q <= its_d_i;
  end
endmodule
