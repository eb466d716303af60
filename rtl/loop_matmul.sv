// LoopMatmul: the LOOP_WS unroller in front of dispatch, after Gemmini's (ucb-bar/gemmini
// 641fefb, LoopMatmul.scala).
//
// The five config words (funct 9-13) and LOOP_WS (funct 8) fill one of two loop slots; the
// head slot is the oldest loop, the tail the next. Five sequencers unroll the loops, each
// taking the head's loop, then the tail's: load A (mvin), load B (mvin2) and load D (mvin3,
// the bias into the accumulator), execute (preload + compute) and store C (mvout). They
// overlap: the execute sequencer waits only until the loads it reads have been issued, the
// store until the computes it reads. A loop retires when every sequencer is done with it.
// The scratchpad is split in halves, one per slot: A fills its half from the bottom, B from
// the top, unless the loop names a half by a_spad_id / b_spad_id (1 or 2: reuse what an
// earlier loop loaded there). The accumulator is split too: D, C and the store address the
// half that toggles after each loop with a non-zero C address. A zero DRAM address skips
// that sequencer's work. A resadd loop (is_resadd) adds B's tile to A's in its slot's
// accumulator half (A's loads overwrite, B's accumulate after them; no execute) and stores
// the sum. A loop whose act is LAYERNORM (2) or SOFTMAX (4) stores C through the
// normalization unit, as LoopMatmulStC's ln_config / ln_st: config_norm words choosing stat
// ids 0 and 1 and one-row mvouts with norm commands, once the loop's computes are issued
// (loop_mm_st_norm.sv); acts 0, 1 and 3 (IGELU) are config_st's and config_norm's alone.
//
// One command leaves a cycle, by priority: store, execute, load D, then load A or B (A's
// and B's loaders are kept at the same k, the head loop's first). A sequencer offers a
// command only while dispatch's queue for it has room (room_i: load, execute, store), so an
// unrolled command never waits at dispatch's door. Other commands pass through unchanged,
// once no loop is configured.
module loop_matmul import systolic_pkg::*, loop_mm_pkg::*; #(
  parameter int DIM               = 4,
  parameter int SP_ROWS           = 1024,
  parameter int ACC_ROWS          = 64,
  parameter int MAX_BLOCK_LEN     = 2,   // blocks per mvin into the scratchpad (or int8 D)
  parameter int MAX_BLOCK_LEN_ACC = 1,   // blocks per mvin of int32 D
  parameter int ST_BLOCKS         = 1    // blocks per mvout
) (
  input  logic       clk_i,
  input  logic       rst_ni,
  input  logic       cmd_valid_i,
  output logic       cmd_ready_o,
  input  insn_t      cmd_i,
  output logic       out_valid_o,
  input  logic       out_ready_i,
  output insn_t      out_o,
  input  logic [2:0] room_i,     // dispatch's load / execute / store queue can take one more
  output logic       busy_o      // a loop is configured (being unrolled)
);
  localparam int QLD = 0, QEX = 1, QST = 2;   // room_i
  localparam int DIM_W = $clog2(DIM);
  localparam logic [28:0] SP_HALF  = 29'(SP_ROWS / 2);
  localparam logic [28:0] ACC_HALF = 29'(ACC_ROWS / 2);

  // a loop slot: the loop's words, and how far the sequencers are with it
  typedef struct packed {
    iter_t             max_i, max_j, max_k, pad_i, pad_j, pad_k;
    logic [WORD_W-1:0] a_addr, b_addr, d_addr, c_addr;
    logic [WORD_W-1:0] a_stride, b_stride, d_stride, c_stride;
    logic              ex_accumulate, full_c, low_d;
    logic [1:0]        a_spad_id, b_spad_id;
    logic              a_transpose, b_transpose, resadd;
    logic [2:0]        act;   // LAYERNORM (2) and SOFTMAX (4): the store's normalizing walk
  } loop_cfg_t;
  typedef struct packed {
    logic            configured;   // LOOP_WS arrived; cleared when the loop retires
    logic            running;      // a sequencer took it
    logic [NSEQ-1:0] started;      // per sequencer (seq_e): took it
    logic [NSEQ-1:0] completed;    // per sequencer: done with it
  } loop_state_t;

  function automatic iter_t min_blocks(input iter_t n, input iter_t limit);
    return (n <= limit) ? n : limit;
  endfunction

  // a config word into a slot (the words' reserved bits are not read)
  /* verilator lint_off UNUSEDSIGNAL */
  function automatic loop_cfg_t apply_word(input loop_cfg_t c, input insn_t w);
    loop_cfg_t               n;
    loop_ws_bounds_rs1_t     pads;
    loop_ws_bounds_rs2_t     bounds;
    loop_ws_addrs_ab_rs1_t   a;
    loop_ws_addrs_ab_rs2_t   b;
    loop_ws_addrs_dc_rs1_t   d;
    loop_ws_addrs_dc_rs2_t   cc;
    loop_ws_strides_ab_rs1_t sa;
    loop_ws_strides_ab_rs2_t sb;
    loop_ws_strides_dc_rs1_t sd;
    loop_ws_strides_dc_rs2_t sc;
    loop_ws_rs1_t            f1;
    loop_ws_rs2_t            f2;
    {pads, a, d, sa, sd, f1} = {6{w.rs1}};
    {bounds, b, cc, sb, sc, f2} = {6{w.rs2}};
    n = c;
    unique case (w.funct)
      FunctLoopWsConfigBounds: begin
        {n.pad_i, n.pad_j, n.pad_k} = {pads.pad_i, pads.pad_j, pads.pad_k};
        {n.max_i, n.max_j, n.max_k} = {bounds.i, bounds.j, bounds.k};
      end
      FunctLoopWsConfigAddrsAb:   {n.a_addr, n.b_addr} = {a.a, b.b};
      FunctLoopWsConfigAddrsDc:   {n.d_addr, n.c_addr} = {d.d, cc.c};
      FunctLoopWsConfigStridesAb: {n.a_stride, n.b_stride} = {sa.a_stride, sb.b_stride};
      FunctLoopWsConfigStridesDc: {n.d_stride, n.c_stride} = {sd.d_stride, sc.c_stride};
      FunctLoopWs: begin
        n.ex_accumulate = f1.ex_accumulate;
        n.full_c        = f1.full_c;
        n.low_d         = f1.low_d;
        n.a_spad_id     = f1.a_spad_id;
        n.b_spad_id     = f1.b_spad_id;
        n.a_transpose   = f2.a_transpose;
        n.b_transpose   = f2.b_transpose;
        n.resadd        = f2.is_resadd;
        n.act           = f1.act;
      end
      default: ;
    endcase
    return n;
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  // scratchpad rows of A's block (0, 0) and one past B's tile; the resadd accumulator rows
  // (a spad id of 1 or 2 names a half: operands an earlier loop loaded there)
  function automatic logic [28:0] a_start(input logic [1:0] spad_id, input logic slot);
    return (spad_id == '0) ? (slot ? SP_HALF : '0) : 29'(spad_id - 2'd1) * SP_HALF;
  endfunction
  function automatic logic [28:0] b_end(input logic [1:0] spad_id, input logic slot);
    return (spad_id == '0) ? (slot ? 29'(SP_ROWS) : SP_HALF) : 29'(spad_id) * SP_HALF;
  endfunction
  function automatic logic [28:0] b_tile_rows(input iter_t max_k, input iter_t max_j);
    return (29'(max_k) * 29'(max_j)) << DIM_W;
  endfunction
  function automatic logic [28:0] resadd_start(input logic slot);
    return slot ? ACC_HALF : '0;
  endfunction
  // the other accumulator half
  function automatic logic [28:0] acc_toggle(input logic [28:0] row);
    return (row + ACC_HALF >= 29'(ACC_ROWS)) ? '0 : row + ACC_HALF;
  endfunction

  // ---- state ----------------------------------------------------------------------
  loop_cfg_t   [1:0] cfg_q;
  loop_state_t [1:0] lst_q, lst_d, lst_n;
  logic              head_q, head_d;
  logic [28:0]       ld_d_row_q, ld_d_row_d, ex_c_row_q, ex_c_row_d, st_c_row_q, st_c_row_d;

  // ---- the command port: loop words fill a slot, others pass once no loop is left ---------
  logic is_loop, loop_configured, cfg_slot, cmd_fire;
  always_comb begin
    is_loop = cmd_i.funct inside {FunctLoopWs, FunctLoopWsConfigBounds, FunctLoopWsConfigAddrsAb,
                                  FunctLoopWsConfigAddrsDc, FunctLoopWsConfigStridesAb,
                                  FunctLoopWsConfigStridesDc};
    loop_configured = lst_q[0].configured || lst_q[1].configured;
    cfg_slot    = lst_q[head_q].configured ? !head_q : head_q;
    busy_o      = loop_configured;
  end
  always_comb begin
    cmd_ready_o = is_loop ? !lst_q[cfg_slot].configured : (!loop_configured && out_ready_i);
    cmd_fire    = cmd_valid_i && cmd_ready_o;
  end

  // a config word into its slot: the slot's only write, so that the wide word decode is
  // evaluated (in simulation) only in the cycle a word arrives
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      cfg_q <= '0;
    end else if (cmd_fire && is_loop) begin
      cfg_q[cfg_slot] <= apply_word(cfg_q[cfg_slot], cmd_i);
    end
  end

  // ---- the sequencers' next loops and their tiles ------------------------------------
  // While no loop is configured, every sequencer is idle and the control below holds its
  // defaults; it is evaluated only while a loop is configured (a simulation of a program
  // without loops pays next to nothing for it).
  logic [NSEQ-1:0] rid;           // per sequencer: the slot it takes next
  logic [NSEQ-1:0] req_valid, req_ready, req_fire, seq_idle, seq_loop;
  xfer_req_t       a_req, b_req, d_req;
  ex_req_t         e_req;
  st_req_t         s_req;
  always_comb begin
    logic [NSEQ-1:0] started;
    logic            resadd, d_done;
    rid       = '0;
    req_valid = '0;
    started   = '0;
    resadd    = 1'b0;
    d_done    = 1'b0;
    if (loop_configured) begin
      for (int s = 0; s < NSEQ; s++) rid[s] = lst_q[head_q].started[s] ? !head_q : head_q;
      for (int s = 0; s < NSEQ; s++) begin
        started = lst_q[rid[s]].started;
        d_done  = lst_q[rid[s]].completed[SeqLdD];
        resadd  = cfg_q[rid[s]].resadd;
        req_valid[s] = lst_q[rid[s]].configured && !started[s];
        unique case (seq_e'(s))
          // a resadd loop's loads write the same accumulator rows: D's (if any) first; then
          // A's, which overwrite, and B's, which accumulate: B's loader starts after A's, and
          // the arbiter serves A's first (LoopMatmul's weighted arbiter in resadd mode)
          SeqLdA: req_valid[s] &= !resadd || cfg_q[rid[s]].d_addr == '0 || d_done;
          SeqLdB: req_valid[s] &= !resadd || started[SeqLdA];
          SeqEx:  req_valid[s] &= started[SeqLdA] && started[SeqLdB] && started[SeqLdD];
          SeqSt:  req_valid[s] &= resadd ? started[SeqLdB] : started[SeqEx];
          default: ;
        endcase
      end
    end
  end
  assign req_fire = req_valid & req_ready;

  // a sequencer's tile, in the cycle it takes it (the sequencer keeps it; on the other cycles
  // these wide values are not read, and a simulation need not compute them)
  always_comb begin
    a_req = '0;
    b_req = '0;
    d_req = '0;
    e_req = '0;
    s_req = '0;
    if (req_fire[SeqLdA]) a_req = lda_req(cfg_q[rid[SeqLdA]], rid[SeqLdA]);
    if (req_fire[SeqLdB]) b_req = ldb_req(cfg_q[rid[SeqLdB]], rid[SeqLdB]);
    if (req_fire[SeqLdD]) begin
      d_req = ldd_req(cfg_q[rid[SeqLdD]], rid[SeqLdD], cfg_q[rid[SeqLdD]].resadd
                      ? resadd_start(rid[SeqLdD]) : ld_d_row_q);
    end
    if (req_fire[SeqEx]) e_req = ex_req(cfg_q[rid[SeqEx]], rid[SeqEx], ex_c_row_q);
    if (req_fire[SeqSt]) s_req = st_req(cfg_q[rid[SeqSt]], rid[SeqSt], st_c_row_q);
  end

  // each sequencer's tile of a loop (each reads only its own fields of the loop)
  /* verilator lint_off UNUSEDSIGNAL */

  function automatic xfer_req_t lda_req(input loop_cfg_t c, input logic slot);
    xfer_req_t r;
    iter_t     mk, pk;
    mk = c.resadd ? c.max_j : c.max_k;   // resadd: A's tile is I x J
    pk = c.resadd ? c.pad_j : c.pad_k;
    r.max_row     = c.a_transpose ? mk : c.max_i;
    r.max_col     = c.a_transpose ? c.max_i : mk;
    r.pad_row     = c.a_transpose ? pk : c.pad_i;
    r.pad_col     = c.a_transpose ? c.pad_i : pk;
    r.max_blocks  = min_blocks(r.max_col, iter_t'(MAX_BLOCK_LEN));
    r.inner_row   = !c.a_transpose;   // i innermost, k outer
    r.dram_addr   = c.a_addr;
    r.dram_stride = c.a_stride;
    r.elem32      = 1'b0;
    r.local_base  = c.resadd ? {3'b100, resadd_start(slot)}
                             : {3'b000, a_start(c.a_spad_id, slot)};
    r.funct       = FunctMvin;
    r.loop_id     = slot;
    return r;
  endfunction

  function automatic xfer_req_t ldb_req(input loop_cfg_t c, input logic slot);
    xfer_req_t r;
    iter_t     mk, pk;
    mk = c.resadd ? c.max_i : c.max_k;   // resadd: B's tile is I x J
    pk = c.resadd ? c.pad_i : c.pad_k;
    r.max_row     = c.b_transpose ? c.max_j : mk;
    r.max_col     = c.b_transpose ? mk : c.max_j;
    r.pad_row     = c.b_transpose ? c.pad_j : pk;
    r.pad_col     = c.b_transpose ? pk : c.pad_j;
    r.max_blocks  = min_blocks(r.max_col, iter_t'(MAX_BLOCK_LEN));
    r.inner_row   = c.b_transpose;    // j innermost, k outer
    r.dram_addr   = c.b_addr;
    r.dram_stride = c.b_stride;
    r.elem32      = 1'b0;
    r.local_base  = c.resadd ? {3'b110, resadd_start(slot)}
                             : {3'b000, b_end(c.b_spad_id, slot) - b_tile_rows(mk, c.max_j)};
    r.funct       = FunctMvin2;
    r.loop_id     = slot;
    return r;
  endfunction

  function automatic xfer_req_t ldd_req(input loop_cfg_t c, input logic slot,
                                        input logic [28:0] acc_row);
    xfer_req_t r;
    r.max_row     = c.max_i;
    r.max_col     = c.max_j;
    r.pad_row     = c.pad_i;
    r.pad_col     = c.pad_j;
    r.max_blocks  = min_blocks(c.max_j, iter_t'(c.low_d ? MAX_BLOCK_LEN : MAX_BLOCK_LEN_ACC));
    r.inner_row   = 1'b1;             // i innermost, j outer
    r.dram_addr   = c.d_addr;
    r.dram_stride = c.d_stride;
    r.elem32      = !c.low_d;
    r.local_base  = {3'b100, acc_row};
    r.funct       = FunctMvin3;
    r.loop_id     = slot;
    return r;
  endfunction

  function automatic ex_req_t ex_req(input loop_cfg_t c, input logic slot,
                                     input logic [28:0] acc_row);
    ex_req_t r;
    r.max_i       = c.max_i;
    r.max_j       = c.max_j;
    r.max_k       = c.max_k;
    r.pad_i       = c.pad_i;
    r.pad_j       = c.pad_j;
    r.pad_k       = c.pad_k;
    r.a_transpose = c.a_transpose;
    r.b_transpose = c.b_transpose;
    r.accumulate  = c.ex_accumulate;
    r.skip        = c.resadd;
    r.a_row       = a_start(c.a_spad_id, slot);
    r.b_row       = b_end(c.b_spad_id, slot) - b_tile_rows(c.max_k, c.max_j);
    r.c_row       = acc_row;
    r.loop_id     = slot;
    return r;
  endfunction

  function automatic st_req_t st_req(input loop_cfg_t c, input logic slot,
                                     input logic [28:0] acc_row);
    st_req_t r;
    r.xfer.max_row     = c.max_i;
    r.xfer.max_col     = c.max_j;
    r.xfer.pad_row     = c.pad_i;
    r.xfer.pad_col     = c.pad_j;
    r.xfer.max_blocks  = c.full_c ? iter_t'(1) : min_blocks(c.max_j, iter_t'(ST_BLOCKS));
    r.xfer.inner_row   = 1'b1;        // i innermost, j outer
    r.xfer.dram_addr   = c.c_addr;
    r.xfer.dram_stride = c.c_stride;
    r.xfer.elem32      = c.full_c;
    r.xfer.local_base  = {2'b10, c.full_c, c.resadd ? resadd_start(slot) : acc_row};
    r.xfer.funct       = FunctMvout;
    r.xfer.loop_id     = slot;
    r.max_k            = c.resadd ? iter_t'(1) : c.max_k;
    r.resadd           = c.resadd;
    r.act              = c.act;
    return r;
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  // ---- the sequencers ---------------------------------------------------------------
  logic  [NSEQ-1:0] seq_valid, seq_ready;
  insn_t [NSEQ-1:0] seq_cmd;
  iter_t            a_k, a_i, b_k, b_j, ex_k, ex_j, ex_i, st_k, st_j, st_i;
  iter_t            unused_d_outer, unused_d_inner;
  iter_t [2:0]      unused_blocks;
  logic [2:0]       ld_done;
  logic             st_done;

  loop_mm_xfer #(.DIM(DIM)) u_ld_a (
    .clk_i, .rst_ni,
    .req_valid_i (req_valid[SeqLdA]), .req_ready_o (req_ready[SeqLdA]), .req_i (a_req),
    .cmd_valid_o (seq_valid[SeqLdA]), .cmd_ready_i (seq_ready[SeqLdA]),
    .cmd_o (seq_cmd[SeqLdA]), .go_i (room_i[QLD]),
    .idle_o (seq_idle[SeqLdA]), .loop_id_o (seq_loop[SeqLdA]),
    .outer_o (a_k), .inner_o (a_i), .blocks_o (unused_blocks[0])
  );
  loop_mm_xfer #(.DIM(DIM)) u_ld_b (
    .clk_i, .rst_ni,
    .req_valid_i (req_valid[SeqLdB]), .req_ready_o (req_ready[SeqLdB]), .req_i (b_req),
    .cmd_valid_o (seq_valid[SeqLdB]), .cmd_ready_i (seq_ready[SeqLdB]),
    .cmd_o (seq_cmd[SeqLdB]), .go_i (room_i[QLD]),
    .idle_o (seq_idle[SeqLdB]), .loop_id_o (seq_loop[SeqLdB]),
    .outer_o (b_k), .inner_o (b_j), .blocks_o (unused_blocks[1])
  );
  loop_mm_xfer #(.DIM(DIM)) u_ld_d (
    .clk_i, .rst_ni,
    .req_valid_i (req_valid[SeqLdD]), .req_ready_o (req_ready[SeqLdD]), .req_i (d_req),
    .cmd_valid_o (seq_valid[SeqLdD]), .cmd_ready_i (seq_ready[SeqLdD]),
    .cmd_o (seq_cmd[SeqLdD]), .go_i (room_i[QLD]),
    .idle_o (seq_idle[SeqLdD]), .loop_id_o (seq_loop[SeqLdD]),
    .outer_o (unused_d_outer), .inner_o (unused_d_inner), .blocks_o (unused_blocks[2])
  );

  // the execute sequencer reads what A's, B's and D's loaders issued for its loop
  always_comb begin
    ld_done = '1;
    if (loop_configured) begin
      for (int s = 0; s < 3; s++) begin
        ld_done[s] = seq_idle[s] || seq_loop[s] != seq_loop[SeqEx];
      end
    end
  end

  loop_mm_ex #(.DIM(DIM)) u_ex (
    .clk_i, .rst_ni,
    .req_valid_i (req_valid[SeqEx]), .req_ready_o (req_ready[SeqEx]), .req_i (e_req),
    .cmd_valid_o (seq_valid[SeqEx]), .cmd_ready_i (seq_ready[SeqEx]),
    .cmd_o (seq_cmd[SeqEx]), .room_i (room_i[QEX]),
    .ld_ka_i (a_k), .ld_i_i (a_i), .ld_kb_i (b_k), .ld_j_i (b_j), .ld_done_i (ld_done),
    .idle_o (seq_idle[SeqEx]), .loop_id_o (seq_loop[SeqEx]),
    .k_o (ex_k), .j_o (ex_j), .i_o (ex_i)
  );

  // the store reads what the execute sequencer issued; a resadd store what B's loader did
  // (after A's: its loads accumulate onto A's)
  always_comb begin
    logic mine_a, mine_b, mine_ex;
    mine_a  = !seq_idle[SeqLdA] && seq_loop[SeqLdA] == seq_loop[SeqSt];
    mine_b  = !seq_idle[SeqLdB] && seq_loop[SeqLdB] == seq_loop[SeqSt];
    mine_ex = !seq_idle[SeqEx] && seq_loop[SeqEx] == seq_loop[SeqSt];
    if (!loop_configured) begin
      st_done = 1'b1;
      st_k    = '0;
      st_j    = '0;
      st_i    = '0;
    end else if (cfg_q[seq_loop[SeqSt]].resadd) begin
      st_done = !mine_a && !mine_b;
      st_k    = '0;
      st_j    = b_j;
      st_i    = b_k;
    end else begin
      st_done = !mine_ex;
      st_k    = ex_k;
      st_j    = ex_j;
      st_i    = ex_i;
    end
  end

  loop_mm_st #(.DIM(DIM)) u_st (
    .clk_i, .rst_ni,
    .req_valid_i (req_valid[SeqSt]), .req_ready_o (req_ready[SeqSt]), .req_i (s_req),
    .cmd_valid_o (seq_valid[SeqSt]), .cmd_ready_i (seq_ready[SeqSt]),
    .cmd_o (seq_cmd[SeqSt]), .room_i (room_i[QST]),
    .ex_k_i (st_k), .ex_j_i (st_j), .ex_i_i (st_i), .ex_done_i (st_done),
    .idle_o (seq_idle[SeqSt]), .loop_id_o (seq_loop[SeqSt])
  );

  // ---- arbitration --------------------------------------------------------------------
  // A or B (Gemmini's WeightedArbiter with weight 0): the head loop's loader first; in a
  // resadd loop A's loader before B's; else the idle one's partner, the one behind in k,
  // B when it has not started
  logic pick_b;
  always_comb begin
    logic same, force_a, force_b, resadd;
    {same, force_a, force_b, resadd} = '0;
    pick_b = 1'b0;
    if (loop_configured) begin
      same    = seq_loop[SeqLdA] == seq_loop[SeqLdB];
      resadd  = cfg_q[seq_loop[SeqLdA]].resadd || cfg_q[seq_loop[SeqLdB]].resadd;
      force_a = !same && seq_loop[SeqLdA] == head_q;
      force_b = !same && seq_loop[SeqLdB] == head_q;
      if (resadd) begin
        force_a = same && !seq_idle[SeqLdA];
        force_b = force_b || seq_idle[SeqLdA];
      end
      if (force_a)                      pick_b = 1'b0;
      else if (force_b)                 pick_b = 1'b1;
      else if (seq_idle[SeqLdA])        pick_b = 1'b1;
      else if (seq_idle[SeqLdB])        pick_b = 1'b0;
      else if (a_k > b_k || (b_k == '0 && b_j == '0)) pick_b = 1'b1;
      else                              pick_b = 1'b0;
    end
  end

  // then by priority: store, execute, load D, load A or B. The granted command comes from
  // the sequencers' registers only; the command port passes through the one multiplexer
  // below, so that what depends on the port stays small.
  logic [NSEQ-1:0] grant;
  insn_t           seq_out;
  always_comb begin
    logic [NSEQ-1:0] offer;
    offer   = '0;
    grant   = '0;
    seq_out = '0;
    if (loop_configured) begin
      offer         = seq_valid;
      offer[SeqLdA] = seq_valid[SeqLdA] && !pick_b;
      offer[SeqLdB] = seq_valid[SeqLdB] && pick_b;
      if (offer[SeqSt])       grant[SeqSt]  = 1'b1;
      else if (offer[SeqEx])  grant[SeqEx]  = 1'b1;
      else if (offer[SeqLdD]) grant[SeqLdD] = 1'b1;
      else if (offer[SeqLdA]) grant[SeqLdA] = 1'b1;
      else if (offer[SeqLdB]) grant[SeqLdB] = 1'b1;
      for (int s = 0; s < NSEQ; s++) begin
        if (grant[s]) seq_out = seq_cmd[s];
      end
    end
  end
  assign out_valid_o = loop_configured ? (grant != '0) : (cmd_valid_i && !is_loop);
  assign out_o       = loop_configured ? seq_out : cmd_i;

  // A sequencer offers a command only while dispatch's queue for it has room, and dispatch
  // takes any such command (checked below): a granted command is taken. (Not waiting for
  // out_ready_i keeps the sequencers' next state independent of the command port.)
  assign seq_ready = grant;

  // ---- slots: configured, taken, done, retired ------------------------------------------
  // (a retiring slot is running, hence configured: LOOP_WS never configures it in that cycle)
  always_comb begin
    lst_n  = lst_q;
    head_d = head_q;
    if (loop_configured) begin
      for (int s = 0; s < NSEQ; s++) begin
        if (req_fire[s]) begin
          lst_n[rid[s]].started[s] = 1'b1;
          lst_n[rid[s]].running    = 1'b1;
        end
        if (seq_idle[s] && lst_q[seq_loop[s]].running && lst_q[seq_loop[s]].started[s]) begin
          lst_n[seq_loop[s]].completed[s] = 1'b1;
        end
      end
      if (lst_q[head_q].running && &lst_q[head_q].completed) begin
        lst_n[head_q] = '0;
        head_d        = !head_q;
      end
    end
  end
  always_comb begin
    lst_d = lst_n;
    if (cmd_fire && cmd_i.funct == FunctLoopWs) lst_d[cfg_slot].configured = 1'b1;
  end

  // the accumulator halves of D, C and the store: the other one after a loop that stores C
  always_comb begin
    ld_d_row_d = ld_d_row_q;
    ex_c_row_d = ex_c_row_q;
    st_c_row_d = st_c_row_q;
    if (req_fire[SeqLdD] && cfg_q[rid[SeqLdD]].c_addr != '0) begin
      ld_d_row_d = acc_toggle(ld_d_row_q);
    end
    if (req_fire[SeqEx] && cfg_q[rid[SeqEx]].c_addr != '0) begin
      ex_c_row_d = acc_toggle(ex_c_row_q);
    end
    if (req_fire[SeqSt] && cfg_q[rid[SeqSt]].c_addr != '0) begin
      st_c_row_d = acc_toggle(st_c_row_q);
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      lst_q      <= '0;
      head_q     <= 1'b0;
      ld_d_row_q <= '0;
      ex_c_row_q <= '0;
      st_c_row_q <= '0;
    end else begin
      lst_q      <= lst_d;
      head_q     <= head_d;
      ld_d_row_q <= ld_d_row_d;
      ex_c_row_q <= ex_c_row_d;
      st_c_row_q <= st_c_row_d;
    end
  end

  // ---- assumptions ----------------------------------------------------------------
  // the scratchpad and the accumulator split into two halves of whole blocks
  if (SP_ROWS % (2 * DIM) != 0 || ACC_ROWS % (2 * DIM) != 0) begin : g_halves_check
    $error("loop_matmul: %0d scratchpad / %0d accumulator rows split into no halves of blocks",
           SP_ROWS, ACC_ROWS);
  end

  // what the static checker refuses of a LOOP_WS word: an act past SOFTMAX (4), a layernorm /
  // softmax store of .full rows, both operands transposed, a scratchpad half past the second
  // (the other fields are not read)
  /* verilator lint_off UNUSEDSIGNAL */
  loop_ws_rs1_t run_rs1;
  loop_ws_rs2_t run_rs2;
  /* verilator lint_on UNUSEDSIGNAL */
  assign run_rs1 = cmd_i.rs1;
  assign run_rs2 = cmd_i.rs2;

  // Checked at every clock edge out of reset (enabled from an always_ff with the registers'
  // asynchronous reset: rst_ni stays an asynchronous reset only). Immediate assertions at the
  // clock edge: they read the values the registers take their next state from, as concurrent
  // ones would, and a simulation evaluates each only when its condition holds.
`ifndef SYNTHESIS  // checks for simulation; synthesis (Yosys) elaborates none
  always_ff @(posedge clk_i or negedge rst_ni) begin : p_assumptions
    if (rst_ni) begin
      // an unrolled command goes to a queue with room: it never waits at dispatch's door
      if (loop_configured && out_valid_o) begin
        assert (out_ready_i) else $error("loop_matmul: dispatch refused an unrolled command");
      end
      if (cmd_fire && cmd_i.funct == FunctLoopWs) begin
        assert (run_rs1.act <= 3'd4 && !((run_rs1.act == 3'd2 || run_rs1.act == 3'd4) && run_rs1.full_c) &&
                !(run_rs2.a_transpose && run_rs2.b_transpose) &&
                run_rs1.a_spad_id <= 2'd2 && run_rs1.b_spad_id <= 2'd2)
          else $error("loop_matmul: a LOOP_WS word the checker refuses");
        // the loop's B tile fits below its end (its bounds are in the slot already; the
        // slot's words do not change while it is configured)
        assert (run_rs2.is_resadd || b_tile_rows(cfg_q[cfg_slot].max_k, cfg_q[cfg_slot].max_j)
                                     <= b_end(run_rs1.b_spad_id, cfg_slot))
          else $error("loop_matmul: loop slot %0d's B tile does not fit its half", cfg_slot);
      end
    end
  end
`endif
endmodule
