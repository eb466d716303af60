// Dispatch and reservation station.
//
// Instructions arrive in program order (one a cycle) and enter the load, execute
// or store queue (LDQ / EXQ / STQ slots; slots [0,LDQ) load, then execute, then
// store). A preload is held here and enters the execute queue merged with the
// compute that follows it (the compute is where its weights are read and its C
// is written). Flush and mvins to the garbage address do nothing; a fence waits
// until every queue is empty.
//
// When an instruction enters, it records as dependencies the older unfinished
// instructions whose local row ranges it conflicts with: read-after-write with
// any of them, write-after-read and write-after-write with those of the other
// queues (a unit performs its own queue's accesses in order). Each queue issues
// in order: its oldest unissued instruction goes to its unit when it has no
// dependency left and the unit is ready. A unit reports completion per slot;
// completion clears the slot bit in every dependency vector, and finished
// entries retire from the head of their queue.
//
// Local rows are numbered in one space for hazards: scratchpad rows 0..SP_ROWS-1,
// accumulator rows from SP_ROWS. Ranges are [lo, hi] intervals (strided accesses
// conservatively cover the whole span).
module dispatch import systolic_pkg::*; #(
  parameter int LDQ      = 4,
  parameter int EXQ      = 4,
  parameter int STQ      = 2,
  parameter int DIM      = 4,
  parameter int SP_ROWS  = 256,
  parameter int ACC_ROWS = 64,
  parameter int SEQ_W    = 32,   // instruction sequence numbers
  localparam int N       = LDQ + EXQ + STQ,
  localparam int SLOT_W  = $clog2(N)
) (
  input  logic                      clk_i,
  input  logic                      rst_ni,
  // instructions in
  input  logic                      cmd_valid_i,
  output logic                      cmd_ready_o,
  input  insn_t                     cmd_i,
  // issue to the units (index 0 load, 1 execute, 2 store): each an instruction and its slot
  output logic [2:0]                iss_valid_o,
  input  logic [2:0]                iss_ready_i,
  output issue_types#(N)::issue_t [2:0] iss_o,
  output preload_t                  iss_pre_o,    // execute: the merged preload
  // completion, one bit per slot
  input  logic [N-1:0]              done_i,
  // status
  output logic                      idle_o,
  output logic [2:0]                room_o,       // per queue: it can take one more
  output logic                      stall_hazard_o,
  output logic                      stall_queue_full_o,
  // per queue, for the cycle stacks: the next instruction waits on a dependency; nothing
  // waits in the queue while the front end is blocked behind a full queue
  output logic [2:0]                hazard_o,
  output logic [2:0]                starved_o,
  // events for the harness log: instructions consumed here, sequence numbers
  output logic                      ev_disp_valid_o,
  output logic [SEQ_W-1:0]          ev_disp_seq_o,
  output logic [2:0][SEQ_W-1:0]     ev_issue_seq_o,
  // each slot's sequence number: the register itself (an output copied from an array of them
  // would be copied whole in every cycle of a simulation)
  output logic [N-1:0][SEQ_W-1:0]   slot_seq_o,
  // debug state for the watchdog report
  output logic [2:0][N-1:0]         dbg_cand_deps_o,
  output logic [2:0][SLOT_W-1:0]    dbg_cand_slot_o,
  output logic [2:0][SLOT_W:0]      dbg_waiting_o,
  output logic [2:0][SLOT_W:0]      occupancy_o,  // per queue: its valid entries (Gemmini's RS counts)
  output logic [N-1:0]              dbg_issued_o,
  output logic                      dbg_fence_o
);
  localparam int RW = 32;                  // width of unified row numbers
  localparam int NQ = 3;                   // queues
  localparam int NRD = 3;                  // local ranges one instruction reads
  localparam logic [1:0] QLD = 2'd0, QEX = 2'd1, QST = 2'd2;
  localparam int QW = SLOT_W + 1;          // queue occupancy counters

  function automatic int qbase(input int q);
    return (q == int'(QLD)) ? 0 : (q == int'(QEX)) ? LDQ : LDQ + EXQ;
  endfunction
  function automatic int qsize(input int q);
    return (q == int'(QLD)) ? LDQ : (q == int'(QEX)) ? EXQ : STQ;
  endfunction
  function automatic logic [1:0] slot_queue(input int s);
    return (s < LDQ) ? QLD : (s < LDQ + EXQ) ? QEX : QST;
  endfunction
  // the next offset within queue q, wrapping
  function automatic logic [SLOT_W-1:0] qnext(input int q, input logic [SLOT_W-1:0] off);
    return (int'(off) == qsize(q) - 1) ? '0 : off + 1'b1;
  endfunction
  // unified row number of a local address (bits 30:29, the accumulate and full-row flags, and
  // 28:26, an mvout's norm command, do not move the row)
  /* verilator lint_off UNUSEDSIGNAL */
  function automatic logic [RW-1:0] urow(input logic [31:0] addr);
    return addr[31] ? RW'(SP_ROWS) + RW'(addr[25:0]) : RW'(addr[25:0]);
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  // ---- parameter assumptions ------------------------------------------------------
  // the unified row space holds both memories (rows are the operand word's 26-bit [25:0])
  if (SP_ROWS < 1 || ACC_ROWS < 1 || SP_ROWS > 2 ** 26 || ACC_ROWS > 2 ** 26) begin : g_rows_check
    $error("dispatch: %0d scratchpad / %0d accumulator rows do not fit 26-bit row numbers",
           SP_ROWS, ACC_ROWS);
  end
  // every queue has a slot, and a slot number fits a DMA tag
  if (LDQ < 1 || EXQ < 1 || STQ < 1 || SLOT_W > DMA_SLOT_W) begin : g_slots_check
    $error("dispatch: queues of %0d/%0d/%0d slots (each at least 1, %0d-bit slot numbers)",
           LDQ, EXQ, STQ, DMA_SLOT_W);
  end

  // an interval [lo, hi] of unified rows
  typedef struct packed {
    logic [RW-1:0] lo;
    logic [RW-1:0] hi;
  } range_t;
  function automatic logic overlap(input range_t a, input range_t b);
    return (a.lo <= b.hi) && (b.lo <= a.hi);
  endfunction
  // rows of an operand word: its address, rows apart
  function automatic range_t span(input logic [WORD_W-1:0] w, input logic [15:0] stride);
    return '{lo: urow(op_addr(w)),
             hi: urow(op_addr(w)) + RW'(op_rows(w) - 16'd1) * RW'(stride)};
  endfunction

  // what an entering instruction records for hazard checks (the flags first: the ranges
  // stay 32-bit aligned, which keeps the simulation's overlap checks cheap)
  typedef struct packed {
    logic [NRD-1:0]         rdv;
    logic                   wrv;
    range_t [NRD-1:0]       rd;
    range_t                 wr;
  } access_t;

  // ---- slot state ------------------------------------------------------------
  logic [N-1:0]          valid_q, issued_q, done_q;
  logic [N-1:0]          deps_q [N];
  // the entries, one array per field: each is written when an instruction enters its slot
  insn_t                 insn_q [N];
  preload_t              pre_q [N];
  access_t               acc_q [N];

  logic [NQ-1:0][SLOT_W-1:0] tail_q, iss_q, head_q;   // offsets in a queue
  logic [NQ-1:0][QW-1:0]     count_q, waiting_q;      // entries, not yet issued

  // front-end state
  logic [SEQ_W-1:0]  seq_q;
  preload_t          pend_q;                   // the preload the next compute merges
  logic [2:0][15:0]  ld_bstride_q;             // shadows of config_ld / config_ex for ranges
  logic [2:0][7:0]   ld_rep_q;                 // config_ld pixel repeats - 1
  logic [15:0]       a_stride_q, c_stride_q;
  logic [15:0]       pool_rows_q;              // config_st: rows a pooling mvout reads (0: no pooling)
  /* verilator lint_off UNUSEDSIGNAL */              // it reads the pooling fields
  config_st_rs1_t    st_rs1;
  config_st_scales_rs1_t sc_rs1;                   // it reads the load_scales bit
  /* verilator lint_on UNUSEDSIGNAL */
  assign st_rs1 = cmd_i.rs1;
  assign sc_rs1 = cmd_i.rs1;

  // ---- decode ----------------------------------------------------------------
  typedef enum logic [1:0] {KindEnq, KindPreload, KindNop, KindFence} kind_e;
  kind_e         kind;
  logic [1:0]    tq;          // target queue
  logic          all_empty, enq, fire, is_cfg;
  logic [SLOT_W-1:0] new_slot;

  assign all_empty = (count_q[QLD] == '0) && (count_q[QEX] == '0) && (count_q[QST] == '0);
  assign is_cfg    = cmd_i.funct == FunctConfig;

  always_comb begin
    kind = KindNop;
    tq   = QLD;
    unique case (cmd_i.funct)
      FunctConfig: begin
        kind = KindEnq;
        unique case (config_kind_e'(cmd_i.rs1[1:0]))
          ConfigLd: tq = QLD;
          ConfigSt, ConfigNorm: tq = QST;   // config_norm is the store path's (Gemmini's)
          default:  tq = QEX;
        endcase
      end
      FunctMvin, FunctMvin2, FunctMvin3: begin
        if (op_addr(cmd_i.rs2) != GARBAGE_ADDR) kind = KindEnq;
      end
      FunctMvout: begin
        kind = KindEnq;
        tq   = QST;
      end
      FunctComputePreloaded, FunctComputeAccumulated: begin
        kind = KindEnq;
        tq   = QEX;
      end
      FunctPreload: kind = KindPreload;
      FunctFence:   kind = KindFence;
      default:      kind = KindNop;   // flush; the checker rejects anything else
    endcase
  end

  always_comb begin
    cmd_ready_o = 1'b1;
    if (kind == KindEnq) cmd_ready_o = count_q[tq] != QW'(qsize(int'(tq)));
    else if (kind == KindFence) cmd_ready_o = all_empty;
    fire     = cmd_valid_i && cmd_ready_o;
    enq      = fire && (kind == KindEnq);
    new_slot = SLOT_W'(qbase(int'(tq))) + tail_q[tq];
    stall_queue_full_o = cmd_valid_i && (kind == KindEnq) && !cmd_ready_o;
    ev_disp_valid_o = fire && (kind != KindEnq);
    ev_disp_seq_o   = seq_q;
    dbg_fence_o     = cmd_valid_i && (kind == KindFence) && !all_empty;
  end

  // What the entering instruction c records for hazard checks, with the config shadows and the
  // pending preload. The functions below are called in the register processes, at the clock
  // edge of a cycle an instruction enters: a simulation evaluates combinational logic on the
  // command port each time the port changes, and these are needed once.
  function automatic access_t access_of(input insn_t c);
    logic [1:0]    ld_state;
    logic [15:0]   blocks;
    range_t        wr, rd;
    logic [RW-1:0] floor;
    access_t       a;
    a      = '0;
    blocks = (op_cols(c.rs2) + 16'(DIM - 1)) / 16'(DIM);
    unique case (c.funct)
      FunctMvin, FunctMvin2, FunctMvin3: begin   // not to the garbage address: it enters
        ld_state = (c.funct == FunctMvin) ? 2'd0 : (c.funct == FunctMvin2) ? 2'd1 : 2'd2;
        // every block of every row: the last block starts (blocks - 1) block strides on
        wr = span(c.rs2, 16'd1);
        wr.hi = wr.hi + RW'(blocks - 16'd1) * RW'(ld_bstride_q[ld_state]);
        // pixel repeats also write up to P - 1 rows below, not below the row's scratchpad half
        if (!c.rs2[31]) begin
          floor = (wr.lo >= RW'(SP_ROWS / 2)) ? RW'(SP_ROWS / 2) : '0;
          wr.lo = (wr.lo >= floor + RW'(ld_rep_q[ld_state])) ? wr.lo - RW'(ld_rep_q[ld_state])
                                                              : floor;
        end
        a.wrv = 1'b1;
        a.wr  = wr;
      end
      FunctMvout: begin
        // a block mvout reads block b from the DIM rows after block b - 1's; a pooling mvout
        // reads config_st's orows x ocols image
        rd       = span(c.rs2, 16'd1);
        rd.hi    = (pool_rows_q != '0) ? rd.lo + RW'(pool_rows_q - 16'd1)
                                       : rd.hi + RW'(blocks - 16'd1) * RW'(DIM);
        a.rdv[0] = 1'b1;
        a.rd[0]  = rd;
      end
      FunctComputePreloaded, FunctComputeAccumulated: begin
        // B (weights, only when loaded), A, D are read; C is written
        a.rdv[0] = c.funct == FunctComputePreloaded && op_addr(pend_q.b) != GARBAGE_ADDR;
        a.rd[0]  = span(pend_q.b, 16'd1);
        a.rdv[1] = op_addr(c.rs1) != GARBAGE_ADDR;
        a.rd[1]  = span(c.rs1, a_stride_q);
        a.rdv[2] = op_addr(c.rs2) != GARBAGE_ADDR;
        a.rd[2]  = span(c.rs2, 16'd1);
        a.wrv    = op_addr(pend_q.c) != GARBAGE_ADDR;
        a.wr     = span(pend_q.c, c_stride_q);
      end
      default: ;   // a config reads and writes no rows
    endcase
    return a;
  endfunction

  // the dependencies of an instruction entering queue q with accesses a: read-after-write on
  // any older unfinished instruction, write-after-read and write-after-write on those of the
  // other queues
  function automatic logic [N-1:0] deps_of(input access_t a, input logic [1:0] q);
    logic [N-1:0] d;
    d = '0;
    for (int j = 0; j < N; j++) begin
      if (valid_q[j] && !done_q[j] && !done_i[j]) begin
        for (int r = 0; r < NRD; r++) begin
          if (a.rdv[r] && acc_q[j].wrv && overlap(a.rd[r], acc_q[j].wr)) d[j] = 1'b1;
        end
        if (slot_queue(j) != q && a.wrv) begin
          if (acc_q[j].wrv && overlap(a.wr, acc_q[j].wr)) d[j] = 1'b1;
          for (int r = 0; r < NRD; r++) begin
            if (acc_q[j].rdv[r] && overlap(a.wr, acc_q[j].rd[r])) d[j] = 1'b1;
          end
        end
      end
    end
    return d;
  endfunction

  // ---- issue -------------------------------------------------------------------
  logic [NQ-1:0][SLOT_W-1:0] cand;
  logic [NQ-1:0]             iss_fire, retire;
  logic [NQ-1:0][SLOT_W-1:0] head;
  always_comb begin
    stall_hazard_o = 1'b0;
    for (int q = 0; q < NQ; q++) begin
      cand[q]        = SLOT_W'(qbase(q)) + iss_q[q];
      head[q]        = SLOT_W'(qbase(q)) + head_q[q];
      retire[q]      = valid_q[head[q]] && done_q[head[q]];
      iss_valid_o[q] = (waiting_q[q] != '0) && (deps_q[cand[q]] == '0);
      iss_fire[q]    = iss_valid_o[q] && iss_ready_i[q];
      iss_o[q]       = '{slot: cand[q], insn: insn_q[cand[q]]};
      ev_issue_seq_o[q]  = slot_seq_o[cand[q]];
      dbg_cand_deps_o[q] = deps_q[cand[q]];
      dbg_cand_slot_o[q] = cand[q];
      room_o[q]      = count_q[q] != QW'(qsize(q));
      hazard_o[q]    = (waiting_q[q] != '0) && (deps_q[cand[q]] != '0);
      starved_o[q]   = (waiting_q[q] == '0) && stall_queue_full_o;
      if (hazard_o[q] && iss_ready_i[q]) stall_hazard_o = 1'b1;
    end
    iss_pre_o = pre_q[cand[QEX]];
    dbg_waiting_o = waiting_q;
    occupancy_o   = count_q;
    dbg_issued_o  = issued_q;
    idle_o        = all_empty;
  end

  // ---- next state -------------------------------------------------------------
  // Computed in the register process (the slots' and queues' next state, the front end's
  // registers under their enables): the command port and the units' completions change during
  // a cycle, and a simulation evaluates combinational logic on them each time they do, where
  // the next state is needed once, at the clock edge.
  // Slots: completions, then issue, then retirement at the queue heads, then the new entry.
  logic [N-1:0] issue_set, retire_set, enq_set;
  always_comb begin
    issue_set  = '0;
    retire_set = '0;
    for (int q = 0; q < NQ; q++) begin
      if (iss_fire[q]) issue_set[cand[q]] = 1'b1;
      if (retire[q]) retire_set[head[q]] = 1'b1;
    end
    enq_set = N'(enq) << new_slot;
  end

  // ---- registers ----------------------------------------------------------------
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      valid_q      <= '0;
      issued_q     <= '0;
      done_q       <= '0;
      deps_q       <= '{default: '0};
      tail_q       <= '0;
      iss_q        <= '0;
      head_q       <= '0;
      count_q      <= '0;
      waiting_q    <= '0;
      seq_q        <= '0;
      pend_q       <= '0;
      ld_bstride_q <= '0;
      ld_rep_q     <= '0;
      a_stride_q   <= 16'd1;
      c_stride_q   <= 16'd1;
      pool_rows_q  <= '0;
    end else begin
      valid_q  <= (valid_q & ~retire_set) | enq_set;
      issued_q <= (issued_q | issue_set) & ~(retire_set | enq_set);
      done_q   <= (done_q | done_i) & ~(retire_set | enq_set);
      if (done_i != '0) begin   // (a completion's cycle only: the slots are an array)
        for (int s = 0; s < N; s++) deps_q[s] <= deps_q[s] & ~done_i;
      end
      if (enq) deps_q[new_slot] <= deps_of(access_of(cmd_i), tq);
      // queue pointers and occupancy
      for (int q = 0; q < NQ; q++) begin
        if (enq && tq == 2'(q)) tail_q[q] <= qnext(q, tail_q[q]);
        if (iss_fire[q])        iss_q[q]  <= qnext(q, iss_q[q]);
        if (retire[q])          head_q[q] <= qnext(q, head_q[q]);
        count_q[q]   <= count_q[q] + QW'(enq && tq == 2'(q)) - QW'(retire[q]);
        waiting_q[q] <= waiting_q[q] + QW'(enq && tq == 2'(q)) - QW'(iss_fire[q]);
      end
      // front end: sequence numbers, the pending preload, the config shadows
      if (fire) seq_q <= seq_q + 1'b1;
      if (fire && kind == KindPreload) pend_q <= '{b: cmd_i.rs1, c: cmd_i.rs2};
      if (fire && is_cfg && cmd_i.rs1[1:0] == ConfigLd) begin
        ld_bstride_q[cmd_i.rs1[4:3]] <= cmd_i.rs1[31:16];
        ld_rep_q[cmd_i.rs1[4:3]]     <= (cmd_i.rs1[15:8] == '0) ? '0 : cmd_i.rs1[15:8] - 8'd1;
      end
      if (fire && is_cfg && cmd_i.rs1[1:0] == ConfigEx) begin
        a_stride_q <= cmd_i.rs1[31:16];
        c_stride_q <= cmd_i.rs2[63:48];
      end
      // a config_st_scales word (the column-scale extension) leaves the store config, and so the pooling
      if (fire && is_cfg && cmd_i.rs1[1:0] == ConfigSt && !sc_rs1.load_scales) begin
        pool_rows_q <= (st_rs1.pool_stride == '0) ? '0 : 16'(st_rs1.orows) * 16'(st_rs1.ocols);
      end
    end
  end

  // the entering instruction's entry (the only writes to the entry arrays and slot_seq_o)
  always_ff @(posedge clk_i) begin
    if (enq) begin
      insn_q[new_slot]     <= cmd_i;
      pre_q[new_slot]      <= pend_q;
      slot_seq_o[new_slot] <= seq_q;
      acc_q[new_slot]      <= access_of(cmd_i);
    end
  end

  // ---- assumptions ----------------------------------------------------------------
  // Checked at every clock edge out of reset (enabled from an always_ff with the registers'
  // asynchronous reset: rst_ni stays an asynchronous reset only).
`ifndef SYNTHESIS  // checks for simulation; synthesis (Yosys) elaborates none
  always_ff @(posedge clk_i or negedge rst_ni) begin : p_assumptions
    if (rst_ni) begin
      // a unit completes an occupied slot, once
      assert ((done_i & (~valid_q | done_q)) == '0)
        else $error("dispatch: completion of slots %b that are free or done already",
                    done_i & (~valid_q | done_q));
      // an entry enters a free slot
      if (enq) begin
        assert (!valid_q[new_slot])
          else $error("dispatch: instruction entered occupied slot %0d", new_slot);
      end
    end
  end
`endif
endmodule
