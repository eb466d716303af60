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
  localparam int N       = LDQ + EXQ + STQ,
  localparam int SLOT_W  = $clog2(N)
) (
  input  logic                      clk_i,
  input  logic                      rst_ni,
  // instructions in
  input  logic                      cmd_valid_i,
  output logic                      cmd_ready_o,
  input  insn_t                     cmd_i,
  // issue to the units: index 0 load, 1 execute, 2 store
  output logic [2:0]                iss_valid_o,
  input  logic [2:0]                iss_ready_i,
  output logic [2:0][SLOT_W-1:0]    iss_slot_o,
  output insn_t [2:0]               iss_o,
  output preload_t                  iss_pre_o,    // execute: the merged preload
  // completion, one bit per slot
  input  logic [N-1:0]              done_i,
  // status
  output logic                      idle_o,
  output logic                      stall_hazard_o,
  output logic                      stall_queue_full_o,
  // events for the harness log: instructions consumed here, sequence numbers
  output logic                      ev_disp_valid_o,
  output logic [31:0]               ev_disp_seq_o,
  output logic [2:0][31:0]          ev_issue_seq_o,
  output logic [N-1:0][31:0]        slot_seq_o,
  // debug state for the watchdog report
  output logic [2:0][N-1:0]         dbg_cand_deps_o,
  output logic [2:0][SLOT_W-1:0]    dbg_cand_slot_o,
  output logic [2:0][SLOT_W:0]      dbg_waiting_o,
  output logic [N-1:0]              dbg_issued_o,
  output logic                      dbg_fence_o
);
  localparam int RW = 32;   // width of unified row numbers

  function automatic int qbase(input int q);
    return (q == 0) ? 0 : (q == 1) ? LDQ : LDQ + EXQ;
  endfunction
  function automatic int qsize(input int q);
    return (q == 0) ? LDQ : (q == 1) ? EXQ : STQ;
  endfunction
  function automatic logic [1:0] slot_queue(input int s);
    return (s < LDQ) ? 2'd0 : (s < LDQ + EXQ) ? 2'd1 : 2'd2;
  endfunction
  // unified row number of a local address
  function automatic logic [RW-1:0] urow(input logic [31:0] addr);
    return addr[31] ? RW'(SP_ROWS) + RW'(addr[28:0]) : RW'(addr[28:0]);
  endfunction
  function automatic logic overlap(input logic [RW-1:0] alo, input logic [RW-1:0] ahi,
                                   input logic [RW-1:0] blo, input logic [RW-1:0] bhi);
    return (alo <= bhi) && (blo <= ahi);
  endfunction

  // ---- slot state ------------------------------------------------------------
  logic [N-1:0]          valid_q, issued_q, done_q;
  logic [N-1:0]          deps_q [N];
  funct_e                funct_q [N];
  logic [63:0]           rs1_q [N], rs2_q [N], pre1_q [N], pre2_q [N];
  logic [31:0]           seq_q [N];
  logic [2:0]            rdv_q [N];
  logic [RW-1:0]         rdlo_q [N][3], rdhi_q [N][3];
  logic                  wrv_q [N];
  logic [RW-1:0]         wrlo_q [N], wrhi_q [N];

  logic [2:0][SLOT_W-1:0] tail_q, iss_q, head_q;   // offsets within each queue
  logic [2:0][SLOT_W:0]   count_q, waiting_q;       // entries, entries not yet issued

  // front-end state
  logic [31:0]  seq_ctr_q;
  logic         pend_q;              // a preload waits for its compute
  logic [63:0]  pend1_q, pend2_q;
  logic [2:0][15:0] ld_bstride_q;    // shadows of config_ld / config_ex for ranges
  logic [15:0]  a_stride_q, c_stride_q;

  // ---- decode ----------------------------------------------------------------
  typedef enum logic [2:0] {K_ENQ, K_PRELOAD, K_NOP, K_FENCE} kind_e;
  kind_e        kind;
  logic [1:0]   tq;          // target queue
  logic [1:0]   ld_state;
  logic [2:0]   n_rdv;
  logic [RW-1:0] n_rdlo [3], n_rdhi [3];
  logic         n_wrv;
  logic [RW-1:0] n_wrlo, n_wrhi;
  logic         all_empty;
  logic         enq, fire;
  logic [SLOT_W-1:0] new_slot;
  logic [N-1:0] new_deps;

  assign all_empty = (count_q[0] == '0) && (count_q[1] == '0) && (count_q[2] == '0);

  always_comb begin
    logic [31:0] a;
    logic [15:0] rows, cols, blocks;
    kind     = K_NOP;
    tq       = 2'd0;
    ld_state = 2'd0;
    n_rdv    = '0;
    n_wrv    = 1'b0;
    n_wrlo   = '0;
    n_wrhi   = '0;
    for (int i = 0; i < 3; i++) begin
      n_rdlo[i] = '0;
      n_rdhi[i] = '0;
    end
    a      = '0;
    rows   = '0;
    cols   = '0;
    blocks = '0;
    unique case (cmd_i.funct)
      7'd0: begin
        kind = K_ENQ;
        tq   = (cmd_i.rs1[1:0] == 2'd1) ? 2'd0 : (cmd_i.rs1[1:0] == 2'd2) ? 2'd2 : 2'd1;
      end
      7'd1, 7'd2, 7'd14: begin
        ld_state = (cmd_i.funct == 7'd2) ? 2'd0 : (cmd_i.funct == 7'd1) ? 2'd1 : 2'd2;
        a    = op_addr(cmd_i.rs2);
        rows = op_rows(cmd_i.rs2);
        cols = op_cols(cmd_i.rs2);
        blocks = (cols + 16'(DIM - 1)) / 16'(DIM);
        if (a != GARBAGE_ADDR) begin
          kind   = K_ENQ;
          tq     = 2'd0;
          n_wrv  = 1'b1;
          n_wrlo = urow(a);
          n_wrhi = urow(a) + RW'(blocks - 16'd1) * RW'(ld_bstride_q[ld_state]) + RW'(rows) - RW'(1);
        end
      end
      7'd3: begin
        kind = K_ENQ;
        tq   = 2'd2;
        a    = op_addr(cmd_i.rs2);
        n_rdv[0]  = 1'b1;
        n_rdlo[0] = urow(a);
        n_rdhi[0] = urow(a) + RW'(op_rows(cmd_i.rs2)) - RW'(1);
      end
      7'd4, 7'd5: begin
        kind = K_ENQ;
        tq   = 2'd1;
        // B (weights, only when loaded), A, D are read; C is written
        if (cmd_i.funct == 7'd4 && op_addr(pend1_q) != GARBAGE_ADDR) begin
          n_rdv[0]  = 1'b1;
          n_rdlo[0] = urow(op_addr(pend1_q));
          n_rdhi[0] = urow(op_addr(pend1_q)) + RW'(op_rows(pend1_q)) - RW'(1);
        end
        if (op_addr(cmd_i.rs1) != GARBAGE_ADDR) begin
          n_rdv[1]  = 1'b1;
          n_rdlo[1] = urow(op_addr(cmd_i.rs1));
          n_rdhi[1] = urow(op_addr(cmd_i.rs1)) + RW'(op_rows(cmd_i.rs1) - 16'd1) * RW'(a_stride_q);
        end
        if (op_addr(cmd_i.rs2) != GARBAGE_ADDR) begin
          n_rdv[2]  = 1'b1;
          n_rdlo[2] = urow(op_addr(cmd_i.rs2));
          n_rdhi[2] = urow(op_addr(cmd_i.rs2)) + RW'(op_rows(cmd_i.rs2)) - RW'(1);
        end
        if (op_addr(pend2_q) != GARBAGE_ADDR) begin
          n_wrv  = 1'b1;
          n_wrlo = urow(op_addr(pend2_q));
          n_wrhi = urow(op_addr(pend2_q)) + RW'(op_rows(pend2_q) - 16'd1) * RW'(c_stride_q);
        end
      end
      7'd6:    kind = K_PRELOAD;
      7'd127:  kind = K_FENCE;
      default: kind = K_NOP;   // flush; the checker rejects anything else
    endcase
  end

  always_comb begin
    cmd_ready_o = 1'b1;
    if (kind == K_ENQ) cmd_ready_o = count_q[tq] != (SLOT_W+1)'(qsize(int'(tq)));
    else if (kind == K_FENCE) cmd_ready_o = all_empty;
    fire     = cmd_valid_i && cmd_ready_o;
    enq      = fire && (kind == K_ENQ);
    new_slot = SLOT_W'(qbase(int'(tq))) + tail_q[tq];
    stall_queue_full_o = cmd_valid_i && (kind == K_ENQ) && !cmd_ready_o;
    ev_disp_valid_o = fire && (kind != K_ENQ);
    ev_disp_seq_o   = seq_ctr_q;
    dbg_fence_o     = cmd_valid_i && (kind == K_FENCE) && !all_empty;
  end

  // dependencies of the entering instruction (evaluated only when one enters)
  always_comb begin
    logic d;
    d = 1'b0;
    new_deps = '0;
    if (enq) begin
      for (int j = 0; j < N; j++) begin
        d = 1'b0;
        if (valid_q[j] && !done_q[j] && !done_i[j]) begin
          for (int r = 0; r < 3; r++) begin
            if (n_rdv[r] && wrv_q[j] && overlap(n_rdlo[r], n_rdhi[r], wrlo_q[j], wrhi_q[j])) d = 1'b1;
          end
          if (slot_queue(j) != tq && n_wrv) begin
            if (wrv_q[j] && overlap(n_wrlo, n_wrhi, wrlo_q[j], wrhi_q[j])) d = 1'b1;
            for (int r = 0; r < 3; r++) begin
              if (rdv_q[j][r] && overlap(n_wrlo, n_wrhi, rdlo_q[j][r], rdhi_q[j][r])) d = 1'b1;
            end
          end
          new_deps[j] = d;
        end
      end
    end
  end

  // ---- issue -------------------------------------------------------------------
  logic [2:0][SLOT_W-1:0] cand;
  logic [2:0]             iss_fire;
  always_comb begin
    stall_hazard_o = 1'b0;
    for (int q = 0; q < 3; q++) begin
      cand[q]        = SLOT_W'(qbase(q)) + iss_q[q];
      iss_valid_o[q] = (waiting_q[q] != '0) && (deps_q[cand[q]] == '0);
      iss_fire[q]    = iss_valid_o[q] && iss_ready_i[q];
      iss_slot_o[q]  = cand[q];
      iss_o[q]       = '{funct: funct_q[cand[q]], rs1: rs1_q[cand[q]], rs2: rs2_q[cand[q]]};
      ev_issue_seq_o[q] = seq_q[cand[q]];
      dbg_cand_deps_o[q] = deps_q[cand[q]];
      dbg_cand_slot_o[q] = cand[q];
      if ((waiting_q[q] != '0) && (deps_q[cand[q]] != '0) && iss_ready_i[q]) stall_hazard_o = 1'b1;
    end
    iss_pre_o = '{b: pre1_q[cand[1]], c: pre2_q[cand[1]]};
    for (int s = 0; s < N; s++) begin
      slot_seq_o[s]  = seq_q[s];
    end
    dbg_waiting_o = waiting_q;
    dbg_issued_o  = issued_q;
    idle_o        = all_empty;
  end

  // ---- state update -------------------------------------------------------------
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      valid_q    <= '0;
      issued_q   <= '0;
      done_q     <= '0;
      tail_q     <= '0;
      iss_q      <= '0;
      head_q     <= '0;
      count_q    <= '0;
      waiting_q  <= '0;
      seq_ctr_q  <= '0;
      pend_q     <= 1'b0;
      pend1_q    <= '0;
      pend2_q    <= '0;
      ld_bstride_q <= '0;
      a_stride_q <= 16'd1;
      c_stride_q <= 16'd1;
      for (int s = 0; s < N; s++) deps_q[s] <= '0;
    end else begin
      logic [2:0] retire;
      // completions
      if (done_i != '0) begin
        done_q <= done_q | done_i;
        for (int s = 0; s < N; s++) deps_q[s] <= deps_q[s] & ~done_i;
      end
      // issue
      for (int q = 0; q < 3; q++) begin
        if (iss_fire[q]) begin
          issued_q[cand[q]] <= 1'b1;
          iss_q[q] <= (int'(iss_q[q]) == qsize(q) - 1) ? '0 : iss_q[q] + 1'b1;
        end
      end
      // retire finished entries from the queue heads
      for (int q = 0; q < 3; q++) begin
        logic [SLOT_W-1:0] h;
        h = SLOT_W'(qbase(q)) + head_q[q];
        retire[q] = valid_q[h] && done_q[h];
        if (retire[q]) begin
          valid_q[h]  <= 1'b0;
          done_q[h]   <= 1'b0;
          issued_q[h] <= 1'b0;
          head_q[q]   <= (int'(head_q[q]) == qsize(q) - 1) ? '0 : head_q[q] + 1'b1;
        end
      end
      // front end
      if (fire) begin
        seq_ctr_q <= seq_ctr_q + 32'd1;
        if (cmd_i.funct == 7'd0 && cmd_i.rs1[1:0] == 2'd1) begin
          ld_bstride_q[cmd_i.rs1[4:3]] <= cmd_i.rs1[31:16];
        end
        if (cmd_i.funct == 7'd0 && cmd_i.rs1[1:0] == 2'd0) begin
          a_stride_q <= cmd_i.rs1[31:16];
          c_stride_q <= cmd_i.rs2[63:48];
        end
        if (kind == K_PRELOAD) begin
          pend_q  <= 1'b1;
          pend1_q <= cmd_i.rs1;
          pend2_q <= cmd_i.rs2;
        end
        if (cmd_i.funct == 7'd4 || cmd_i.funct == 7'd5) pend_q <= 1'b0;
      end
      if (enq) begin
        valid_q[new_slot]  <= 1'b1;
        issued_q[new_slot] <= 1'b0;
        done_q[new_slot]   <= 1'b0;
        deps_q[new_slot]   <= new_deps;
        funct_q[new_slot]  <= cmd_i.funct;
        rs1_q[new_slot]    <= cmd_i.rs1;
        rs2_q[new_slot]    <= cmd_i.rs2;
        pre1_q[new_slot]   <= pend1_q;
        pre2_q[new_slot]   <= pend2_q;
        seq_q[new_slot]    <= seq_ctr_q;
        rdv_q[new_slot]    <= n_rdv;
        for (int r = 0; r < 3; r++) begin
          rdlo_q[new_slot][r] <= n_rdlo[r];
          rdhi_q[new_slot][r] <= n_rdhi[r];
        end
        wrv_q[new_slot]  <= n_wrv;
        wrlo_q[new_slot] <= n_wrlo;
        wrhi_q[new_slot] <= n_wrhi;
        tail_q[tq] <= (int'(tail_q[tq]) == qsize(int'(tq)) - 1) ? '0 : tail_q[tq] + 1'b1;
      end
      for (int q = 0; q < 3; q++) begin
        count_q[q]   <= count_q[q] + ((enq && tq == 2'(q)) ? 1 : 0) - (retire[q] ? 1 : 0);
        waiting_q[q] <= waiting_q[q] + ((enq && tq == 2'(q)) ? 1 : 0) - (iss_fire[q] ? 1 : 0);
      end
    end
  end
endmodule
