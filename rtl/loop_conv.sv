// Conv loop unroller (Gemmini's LoopConv): LOOP_CONV_WS and its six config words in, the
// config_ld / mvin / preload / compute / mvout instructions of the loop out, in front of
// dispatch. Two loops may be in flight (slots): while one runs, the next is configured and its
// loads overlap the first one's computes and stores.
//
// Each loop runs through five sequencers (loop_conv_ld_bias, _ld_input, _ld_weight, _ex, _st),
// each its own iterators and instructions around one shell (loop_conv_seq).
// A sequencer takes the oldest loop it has not run yet: the loads as soon as a loop is
// configured, execute once its three loads have started, store once execute has. Execute
// steps only while this loop's loads have all been sent, store only once execute has; the
// loads of a younger loop hold while execute waits for an older loop's loads. Their outputs
// meet in a fixed-priority arbiter (store, execute, bias, weights, input), each taking part
// only while dispatch's queue of its unit has room (room_i: load, execute, store).
//
// Local memory, as LoopConv places it: a loop's input tile starts at the bottom of its slot's
// scratchpad half and its weights end at the top of it (a_spad_id / b_spad_id name a half
// instead); bias, results and stores share an accumulator half that toggles after each loop
// with an output address.
//
// Other instructions pass straight through, and wait while a loop is configured or runs.
// The training flags (wrot180, input_dilated, the trans_* layouts) are the sequencers' (the
// execute sequencer's config_ex of a transposed input keeps all but config_ex's strides).
// Pooling (no_pool = 0) is the store sequencer's: config_st's pooling fields and the store unit.
module loop_conv import systolic_pkg::*, loop_conv_pkg::*; #(
  parameter int  DIM               = 4,
  parameter int  SP_ROWS           = 256,
  parameter int  ACC_ROWS          = 64,
  parameter int  MAX_BLOCK_LEN     = 2,
  // accumulator blocks per mvin3: Gemmini's max_block_len_acc (its DMA width in int32 rows)
  parameter int  MAX_BLOCK_LEN_ACC = (MAX_BLOCK_LEN >= 8) ? MAX_BLOCK_LEN / 4 : 1,
  parameter int  LATENCY           = 2,   // stages of each sequencer's command pipeline
  localparam int SP_AW             = $clog2(SP_ROWS),
  localparam int ACC_AW            = $clog2(ACC_ROWS),
  localparam int SP_HALF           = SP_ROWS / NLOOPS,
  localparam int ACC_HALF          = ACC_ROWS / NLOOPS
) (
  input  logic       clk_i,
  input  logic       rst_ni,
  input  logic       cmd_valid_i,
  output logic       cmd_ready_o,
  input  insn_t      cmd_i,
  output logic       out_valid_o,
  input  logic       out_ready_i,
  output insn_t      out_o,
  input  logic [2:0] room_i,   // dispatch's load / execute / store queue can take one more
  // the next stage takes any command offered while dispatch's queue for it has room
  // (LoopMatmul unrolls no loop): then a granted command is taken
  input  logic       out_free_i,
  output logic       busy_o
);
  if ((DIM & (DIM - 1)) != 0 || SP_ROWS % NLOOPS != 0 || ACC_ROWS % NLOOPS != 0) begin : g_check
    $error("loop_conv: DIM = %0d must be a power of two, SP_ROWS = %0d and ACC_ROWS = %0d even",
           DIM, SP_ROWS, ACC_ROWS);
  end

  localparam int LOG_DIM = $clog2(DIM);
  // the unit (dispatch queue) of each sequencer's instructions, and the arbiter's order
  localparam int UNIT [NSEQ] = '{0, 0, 0, 1, 2};
  localparam int PRIO [NSEQ] = '{SeqSt, SeqEx, SeqBias, SeqWgt, SeqInput};

  // ---- loop slots ------------------------------------------------------------------
  // a slot's words as they arrive; its fields, their derived values and its tiles' places,
  // decoded once, as its LOOP_CONV_WS arrives
  conv_words_t                  words_q [NLOOPS];
  conv_cfg_t                    cfg_q [NLOOPS];
  conv_der_t                    der_q [NLOOPS];
  logic [SP_AW-1:0]             a_start_q [NLOOPS];   // the input tile's first row
  logic [SP_AW:0]               b_end_q [NLOOPS];     // the row past the weight tile
  logic [NLOOPS-1:0]            configured_q, configured_d, configured_n, running_q, running_d;
  logic [NLOOPS-1:0][NSEQ-1:0]  started_q, started_d, completed_q, completed_d;
  logic                         head_q, head_d;   // the oldest loop
  logic [ACC_AW-1:0]            bias_at_q, bias_at_d, ex_at_q, ex_at_d, st_at_q, st_at_d;

  // ---- words in ---------------------------------------------------------------------
  logic             is_run, is_loop, loop_busy, word_fire, run_fire, cfg_slot;
  logic [2:0]       word_ix;
  /* verilator lint_off UNUSEDSIGNAL */   // the fields read here and checked below
  loop_conv_ws_rs1_t run_rs1;
  /* verilator lint_on UNUSEDSIGNAL */

  assign is_run    = cmd_i.funct == FunctLoopConvWs;
  assign is_loop   = is_run || (cmd_i.funct >= FunctLoopConvWsConfig1
                                && cmd_i.funct <= FunctLoopConvWsConfig6);
  assign loop_busy = configured_q != '0;
  assign cfg_slot  = configured_q[head_q] ? !head_q : head_q;   // the slot being configured
  assign word_fire = cmd_valid_i && is_loop && !configured_q[cfg_slot];
  assign run_fire  = word_fire && is_run;
  assign word_ix   = 3'(cmd_i.funct - FunctLoopConvWs);

  assign run_rs1   = cmd_i.rs1;

  // a loop's fields from its slot's words and its LOOP_CONV_WS (a function, called where that
  // word is taken: so that this wide path costs a simulation nothing on the other cycles)
  /* verilator lint_off UNUSEDSIGNAL */   // the slot's own LOOP_CONV_WS word, run's funct
  function automatic conv_cfg_t run_cfg(input conv_words_t w, input insn_t run);
    return conv_decode({w[6:1], run.rs2, run.rs1});
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */
  // a compute takes max_pixels_per_row kernel columns of kchs channels: at most DIM of them
  /* verilator lint_off UNUSEDSIGNAL */   // three of the fields
  function automatic logic pixels_fit(input conv_cfg_t c);
    return c.max_pixels == 8'd1
           || (32'(c.max_pixels) * 32'(c.kchs) <= DIM && c.kernel_dilation == it_t'(1));
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  // where a loop's tiles go: the input tile at the bottom of its slot's scratchpad half, the
  // weights ending at its top, or the halves a_spad_id / b_spad_id name (1 the lower)
  function automatic logic [SP_AW-1:0] a_place(input logic slot, input logic [1:0] id);
    return (id == '0) ? SP_AW'(32'(slot) * SP_HALF) : SP_AW'(32'(id - 2'd1) * SP_HALF);
  endfunction
  function automatic logic [SP_AW:0] b_place(input logic slot, input logic [1:0] id);
    return (id == '0) ? (SP_AW + 1)'((32'(slot) + 1) * SP_HALF) : (SP_AW + 1)'(32'(id) * SP_HALF);
  endfunction

  // ---- sequencers -------------------------------------------------------------------
  logic [NSEQ-1:0] req_valid, req_ready, req_slot, seq_slot, seq_idle, seq_wait;
  logic [NSEQ-1:0] seq_valid, seq_ready, bid, grant;
  insn_t           seq_cmd [NSEQ];
  logic            ld_done, ex_done, ex_waiting;

  // each sequencer asks for the oldest loop it has not started: loads once the loop is
  // configured, execute once the loads have started, store once execute has. (While no loop
  // is configured every sequencer is idle, and this control holds its defaults: it is
  // evaluated only while a loop is in flight.)
  always_comb begin
    logic l;
    l         = 1'b0;
    req_slot  = '0;
    req_valid = '0;
    if (loop_busy) begin
      for (int s = 0; s < NSEQ; s++) begin
        l = started_q[head_q][s] ? !head_q : head_q;
        req_slot[s]  = l;
        req_valid[s] = configured_q[l] && !started_q[l][s];
        if (s == SeqEx) req_valid[s] &= started_q[l][SeqBias] && started_q[l][SeqInput]
                                        && started_q[l][SeqWgt];
        if (s == SeqSt) req_valid[s] &= started_q[l][SeqEx];
      end
    end
  end

  // execute waits for its loop's loads; the loads of another loop hold meanwhile
  always_comb begin
    logic e;
    e          = 1'b0;
    ex_waiting = 1'b0;
    seq_wait   = '0;
    ld_done    = 1'b1;
    ex_done    = 1'b1;
    if (loop_busy) begin
      e          = seq_slot[SeqEx];
      ex_waiting = started_q[e][SeqEx] && !completed_q[e][SeqEx]
                   && !(completed_q[e][SeqBias] && completed_q[e][SeqInput]
                        && completed_q[e][SeqWgt]);
      for (int s = 0; s < NSEQ; s++) seq_wait[s] = ex_waiting && seq_slot[s] != e;
      for (int s = SeqBias; s <= SeqWgt; s++) ld_done &= seq_slot[s] != e || seq_idle[s];
      ex_done = seq_slot[SeqEx] != seq_slot[SeqSt] || seq_idle[SeqEx];
    end
  end

  loop_conv_ld_bias #(
    .DIM(DIM), .ACC_ROWS(ACC_ROWS), .MAX_BLOCK_LEN_ACC(MAX_BLOCK_LEN_ACC), .LATENCY(LATENCY)
  ) u_ld_bias (
    .clk_i, .rst_ni,
    .req_valid_i (req_valid[SeqBias]), .req_ready_o (req_ready[SeqBias]),
    .req_slot_i (req_slot[SeqBias]), .req_addr_i (bias_at_q),
    .cfgs_i (cfg_q), .ders_i (der_q),
    .slot_o (seq_slot[SeqBias]), .idle_o (seq_idle[SeqBias]), .wait_i (seq_wait[SeqBias]),
    .cmd_valid_o (seq_valid[SeqBias]), .cmd_ready_i (seq_ready[SeqBias]),
    .cmd_o (seq_cmd[SeqBias])
  );

  loop_conv_ld_input #(
    .DIM(DIM), .SP_ROWS(SP_ROWS), .MAX_BLOCK_LEN(MAX_BLOCK_LEN), .LATENCY(LATENCY)
  ) u_ld_input (
    .clk_i, .rst_ni,
    .req_valid_i (req_valid[SeqInput]), .req_ready_o (req_ready[SeqInput]),
    .req_slot_i (req_slot[SeqInput]), .req_addr_i (a_start_q[req_slot[SeqInput]]),
    .cfgs_i (cfg_q), .ders_i (der_q),
    .slot_o (seq_slot[SeqInput]), .idle_o (seq_idle[SeqInput]), .wait_i (seq_wait[SeqInput]),
    .cmd_valid_o (seq_valid[SeqInput]), .cmd_ready_i (seq_ready[SeqInput]),
    .cmd_o (seq_cmd[SeqInput])
  );

  loop_conv_ld_weight #(
    .DIM(DIM), .SP_ROWS(SP_ROWS), .MAX_BLOCK_LEN(MAX_BLOCK_LEN), .LATENCY(LATENCY)
  ) u_ld_weight (
    .clk_i, .rst_ni,
    .req_valid_i (req_valid[SeqWgt]), .req_ready_o (req_ready[SeqWgt]),
    .req_slot_i (req_slot[SeqWgt]), .req_addr_i (b_end_q[req_slot[SeqWgt]]),
    .cfgs_i (cfg_q), .ders_i (der_q),
    .slot_o (seq_slot[SeqWgt]), .idle_o (seq_idle[SeqWgt]), .wait_i (seq_wait[SeqWgt]),
    .cmd_valid_o (seq_valid[SeqWgt]), .cmd_ready_i (seq_ready[SeqWgt]),
    .cmd_o (seq_cmd[SeqWgt])
  );

  loop_conv_ex #(
    .DIM(DIM), .SP_ROWS(SP_ROWS), .ACC_ROWS(ACC_ROWS), .LATENCY(LATENCY)
  ) u_ex (
    .clk_i, .rst_ni,
    .req_valid_i (req_valid[SeqEx]), .req_ready_o (req_ready[SeqEx]),
    .req_slot_i (req_slot[SeqEx]), .req_a_i (a_start_q[req_slot[SeqEx]]),
    .req_b_end_i (b_end_q[req_slot[SeqEx]]), .req_c_i (ex_at_q),
    .cfgs_i (cfg_q), .ders_i (der_q),
    .slot_o (seq_slot[SeqEx]), .idle_o (seq_idle[SeqEx]), .ld_done_i (ld_done),
    .cmd_valid_o (seq_valid[SeqEx]), .cmd_ready_i (seq_ready[SeqEx]), .cmd_o (seq_cmd[SeqEx])
  );

  loop_conv_st #(
    .DIM(DIM), .ACC_ROWS(ACC_ROWS), .LATENCY(LATENCY)
  ) u_st (
    .clk_i, .rst_ni,
    .req_valid_i (req_valid[SeqSt]), .req_ready_o (req_ready[SeqSt]),
    .req_slot_i (req_slot[SeqSt]), .req_addr_i (st_at_q),
    .cfgs_i (cfg_q), .ders_i (der_q),
    .slot_o (seq_slot[SeqSt]), .idle_o (seq_idle[SeqSt]), .ex_done_i (ex_done),
    .cmd_valid_o (seq_valid[SeqSt]), .cmd_ready_i (seq_ready[SeqSt]), .cmd_o (seq_cmd[SeqSt])
  );

  // ---- arbiter and the output -------------------------------------------------------
  // The granted command comes from the sequencers' registers only, and their readies do not
  // wait for out_ready_i (out_free_i says it takes them; checked below): the command port
  // passes through the one multiplexer of out_o, so that what depends on the port stays small.
  logic  taken;
  insn_t arb_cmd;
  always_comb begin
    taken   = 1'b0;
    grant   = '0;
    arb_cmd = '0;
    bid     = '0;
    if (loop_busy) begin
      for (int s = 0; s < NSEQ; s++) bid[s] = seq_valid[s] && room_i[UNIT[s]];
      for (int p = 0; p < NSEQ; p++) begin
        if (!taken && bid[PRIO[p]]) begin
          taken          = 1'b1;
          grant[PRIO[p]] = 1'b1;
          arb_cmd        = seq_cmd[PRIO[p]];
        end
      end
    end
  end
  assign out_o       = loop_busy ? arb_cmd : cmd_i;
  assign out_valid_o = loop_busy ? taken : (cmd_valid_i && !is_loop);
  assign seq_ready   = grant & {NSEQ{out_free_i && loop_busy}};
  assign cmd_ready_o = is_loop ? !configured_q[cfg_slot] : (!loop_busy && out_ready_i);
  assign busy_o      = loop_busy;

  // ---- next state -------------------------------------------------------------------
  // a loop's words, its sequencers starting and finishing, the oldest loop retiring (a
  // retiring slot is running, hence configured: LOOP_CONV_WS never configures it in that
  // cycle, and the one bit that the command port sets is apart, below)
  always_comb begin
    configured_n = configured_q;
    running_d    = running_q;
    started_d    = started_q;
    completed_d  = completed_q;
    head_d       = head_q;
    bias_at_d    = bias_at_q;
    ex_at_d      = ex_at_q;
    st_at_d      = st_at_q;
    if (loop_busy) begin
      for (int s = 0; s < NSEQ; s++) begin
        if (req_valid[s] && req_ready[s]) begin
          running_d[req_slot[s]]    = 1'b1;
          started_d[req_slot[s]][s] = 1'b1;
        end
        if (seq_idle[s] && running_q[seq_slot[s]] && started_q[seq_slot[s]][s]) begin
          completed_d[seq_slot[s]][s] = 1'b1;
        end
      end
      // the accumulator half moves on after each loop that stores its output
      if (req_valid[SeqBias] && req_ready[SeqBias]
          && cfg_q[req_slot[SeqBias]].output_addr != '0) begin
        bias_at_d = ACC_AW'((32'(bias_at_q) + ACC_HALF) % ACC_ROWS);
      end
      if (req_valid[SeqEx] && req_ready[SeqEx] && cfg_q[req_slot[SeqEx]].output_addr != '0) begin
        ex_at_d = ACC_AW'((32'(ex_at_q) + ACC_HALF) % ACC_ROWS);
      end
      if (req_valid[SeqSt] && req_ready[SeqSt] && cfg_q[req_slot[SeqSt]].output_addr != '0) begin
        st_at_d = ACC_AW'((32'(st_at_q) + ACC_HALF) % ACC_ROWS);
      end
      if (running_q[head_q] && completed_q[head_q] == '1) begin
        configured_n[head_q] = 1'b0;
        running_d[head_q]    = 1'b0;
        started_d[head_q]    = '0;
        completed_d[head_q]  = '0;
        head_d               = !head_q;
      end
    end
  end

  always_comb begin
    configured_d = configured_n;
    if (run_fire) configured_d[cfg_slot] = 1'b1;
  end

  // ---- registers --------------------------------------------------------------------
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      configured_q <= '0;
      running_q    <= '0;
      started_q    <= '0;
      completed_q  <= '0;
      head_q       <= 1'b0;
      bias_at_q    <= '0;
      ex_at_q      <= '0;
      st_at_q      <= '0;
    end else begin
      configured_q <= configured_d;
      running_q    <= running_d;
      started_q    <= started_d;
      completed_q  <= completed_d;
      head_q       <= head_d;
      bias_at_q    <= bias_at_d;
      ex_at_q      <= ex_at_d;
      st_at_q      <= st_at_d;
    end
  end

  // a slot's words: each word as it arrives; its fields with its LOOP_CONV_WS, decoded in the
  // flops' enable (this wide decode, once a loop, then costs a simulation nothing on the
  // other cycles)
  always_ff @(posedge clk_i) begin
    if (word_fire) words_q[cfg_slot][word_ix] <= {cmd_i.rs2, cmd_i.rs1};
    if (run_fire) begin
      cfg_q[cfg_slot]     <= run_cfg(words_q[cfg_slot], cmd_i);
      der_q[cfg_slot]     <= conv_derive(run_cfg(words_q[cfg_slot], cmd_i), LOG_DIM);
      a_start_q[cfg_slot] <= a_place(cfg_slot, run_rs1.a_spad_id);
      b_end_q[cfg_slot]   <= b_place(cfg_slot, run_rs1.b_spad_id);
    end
  end

  // ---- assumptions ------------------------------------------------------------------

`ifndef SYNTHESIS  // checks for simulation; synthesis (Yosys) elaborates none
  always_ff @(posedge clk_i or negedge rst_ni) begin : p_assumptions
    // a granted command is taken, and only then
    if (rst_ni && loop_busy && out_valid_o) begin
      assert (out_ready_i == out_free_i)
        else $error("loop_conv: the next stage %0s an unrolled command", out_ready_i ? "took"
                    : "refused");
    end
    if (rst_ni && run_fire) begin
      assert (run_rs1.a_spad_id <= 2'd2 && run_rs1.b_spad_id <= 2'd2)
        else $error("loop_conv: LOOP_CONV_WS a_spad_id / b_spad_id above 2");
      assert (pixels_fit(run_cfg(words_q[cfg_slot], cmd_i)))
        else $error("loop_conv: max_pixels_per_row %0d x kchs %0d is more than DIM %0d",
                    run_cfg(words_q[cfg_slot], cmd_i).max_pixels,
                    run_cfg(words_q[cfg_slot], cmd_i).kchs, DIM);
    end
  end
`endif
endmodule
