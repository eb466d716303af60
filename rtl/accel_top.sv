// Top level of the accelerator: the loop unrollers, dispatch, load / execute / store
// units, the local memories and the performance counters. Instructions come in through
// cmd_* and pass the unrollers (LOOP_CONV_WS, then LOOP_WS are expanded there; other
// instructions go on) to dispatch; the DRAM (latency, beats, the one memory port) is
// modelled by the harness behind the dma_* request/response ports.
//
// Each unit drives one request bundle per local-memory port (readers with we = 0).
// Scratchpad requesters, highest priority first: execute result write, load
// write, execute A read, execute D read, execute B read, store read.
// Accumulator: execute result write, load write, store read.
module accel_top import systolic_pkg::*; #(
  parameter int DIM            = 4,
  parameter int SP_ROWS        = 1024,
  parameter int SP_BANKS       = 2,
  parameter int ACC_ROWS       = 64,
  parameter int ACC_BANKS      = 2,
  parameter int MAX_BLOCK_LEN  = 2,
  parameter int LD_QUEUE       = 4,
  parameter int EX_QUEUE       = 4,
  parameter int ST_QUEUE       = 2,
  parameter int DATAFLOWS      = 3,   // bit 0 output-stationary, bit 1 weight-stationary
  parameter bit STORE_REQUANT  = 1'b0,   // the store unit's requantization extension (not Gemmini's)
  parameter bit STORE_COL_SCALES = 1'b0,   // the store unit's column-scale extension (not Gemmini's)
  parameter int NORM_STATS     = 0,      // the normalization unit's stat ids (Gemmini's; 0: none)
  localparam int N             = LD_QUEUE + EX_QUEUE + ST_QUEUE,
  localparam int SLOT_W        = $clog2(N),
  localparam int RESP_W        = DIM * MAX_BLOCK_LEN * 32,
  // LoopMatmul's blocks per mvin of int32 bias (Gemmini's max_block_len_acc: a DMA
  // transfer's bytes over 4-byte rows) and per mvout (a block mvout: as many as an mvin)
  localparam int MAX_BLOCK_LEN_ACC = (MAX_BLOCK_LEN >= 4) ? MAX_BLOCK_LEN / 4 : 1,
  localparam int ST_BLOCKS     = MAX_BLOCK_LEN
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  // instructions
  input  logic                 cmd_valid_i,
  output logic                 cmd_ready_o,
  input  logic [6:0]           cmd_funct_i,
  input  logic [63:0]          cmd_rs1_i,
  input  logic [63:0]          cmd_rs2_i,
  // DMA reads
  output logic                 dma_rd_req_valid_o,
  input  logic                 dma_rd_req_ready_i,
  output logic [63:0]          dma_rd_req_addr_o,
  output logic [15:0]          dma_rd_req_len_o,
  output logic [31:0]          dma_rd_req_tag_o,
  input  logic                 dma_rd_resp_valid_i,
  output logic                 dma_rd_resp_ready_o,
  input  logic [31:0]          dma_rd_resp_tag_i,
  input  logic [RESP_W-1:0]    dma_rd_resp_data_i,
  // DMA writes
  output logic                 dma_wr_req_valid_o,
  input  logic                 dma_wr_req_ready_i,
  output logic [63:0]          dma_wr_req_addr_o,
  output logic [15:0]          dma_wr_req_len_o,
  output logic [31:0]          dma_wr_req_tag_o,
  output logic [DIM*32-1:0]    dma_wr_req_data_o,
  input  logic                 dma_wr_ack_valid_i,
  input  logic [31:0]          dma_wr_ack_tag_i,
  // status: the performance counters, indexed by counter_e
  output logic                 idle_o,
  output logic [NumCounters-1:0][63:0] ctr_o,
  // events for the instruction log
  output logic                 ev_disp_valid_o,
  output logic [31:0]          ev_disp_seq_o,
  output logic [2:0]           ev_issue_o,
  output logic [2:0][31:0]     ev_issue_seq_o,
  output logic [N-1:0]         ev_done_o,
  output logic [N-1:0][31:0]   ev_slot_seq_o,
  // debug state for the watchdog report
  output logic [2:0][N-1:0]    dbg_cand_deps_o,
  output logic [2:0][SLOT_W-1:0] dbg_cand_slot_o,
  output logic [2:0][SLOT_W:0] dbg_waiting_o,
  // per dispatch queue (LD, EX, ST): its valid entries, Gemmini's RESERVATION_STATION_*_COUNT
  output logic [2:0][SLOT_W:0] rs_count_o,
  output logic [N-1:0]         dbg_issued_o,
  output logic                 dbg_fence_o,
  output logic [2:0]           dbg_unit_ready_o,
  output logic [15:0]          dbg_ld_outstanding_o,
  output logic [15:0]          dbg_st_outstanding_o,
  output logic [3:0]           dbg_ex_state_o
);
  // local memory requesters, highest priority first (see the note above)
  localparam int SP_NREQ  = 6, ACC_NREQ = 3;
  localparam int SP_EX_WR = 0, SP_LD = 1, SP_EX_RD = 2, SP_ST = 5;   // execute reads 2..4
  localparam int ACC_EX_WR = 0, ACC_LD = 1, ACC_ST = 2;
  localparam int LD = 0, EX = 1, ST = 2;   // issue ports of dispatch
  typedef issue_types#(N)::issue_t             issue_t;
  typedef mem_types#(DIM, SP_ROWS, 8)::req_t   sp_req_t;
  typedef mem_types#(DIM, ACC_ROWS, 32)::req_t acc_req_t;

  logic [2:0]              iss_valid, iss_ready;
  issue_t [2:0]            iss;
  preload_t                iss_pre;
  logic [N-1:0]            done_ld, done_ex, done_st, done;
  logic                    stall_hazard, stall_queue_full, sp_conflict, acc_conflict;
  logic [2:0]              hazard, starved;
  unit_stack_t [2:0]       ustack;   // .busy also counts in the unit's busy counter
  logic                    ld_dma_wait, mesh_busy, st_dma_wait;
  dma_req_t                rd_req, wr_req;

  // local memory requests (each requester drives its own: readers with we = 0), grants, rows
  sp_req_t [SP_NREQ-1:0]           sp;
  acc_req_t [ACC_NREQ-1:0]         acc;
  logic [SP_NREQ-1:0]              sp_gnt;
  logic [ACC_NREQ-1:0]             acc_gnt;
  logic [SP_NREQ-1:0][DIM*8-1:0]   sp_rdata;
  logic [ACC_NREQ-1:0][DIM*32-1:0] acc_rdata;

  // ---- the loop unrollers: cmd_* -> LoopConv -> LoopMatmul -> dispatch ---------------
  // (Gemmini's order.) Each passes other instructions on, once it has no loop of its own;
  // their sequencers offer a command only while dispatch's queue for it has room.
  insn_t      cmd, conv_cmd, mm_cmd;
  logic       conv_valid, conv_ready, mm_valid, mm_ready, conv_busy, mm_busy, mm_free, disp_idle;
  logic [2:0] room;
  logic       conv_word, mm_word, conv_en, mm_en, clk_conv, clk_mm;
  assign cmd = '{funct: funct_e'(cmd_funct_i), rs1: cmd_rs1_i, rs2: cmd_rs2_i};

  // Each unroller runs on its own gated clock: enabled while it has a loop, or one of its loop
  // words is offered to it (LoopConv's at the command port, LoopMatmul's at LoopConv's output).
  // In the other cycles it has nothing to do (every sequencer is idle, and other instructions
  // pass through combinationally), so its registers would keep their values anyway; gated, the
  // simulation skips it: a program of LOOP_WS words never clocks LoopConv.
  assign conv_word = cmd.funct inside {FunctLoopConvWs, FunctLoopConvWsConfig1,
                                       FunctLoopConvWsConfig2, FunctLoopConvWsConfig3,
                                       FunctLoopConvWsConfig4, FunctLoopConvWsConfig5,
                                       FunctLoopConvWsConfig6};
  assign mm_word   = conv_cmd.funct inside {FunctLoopWs, FunctLoopWsConfigBounds,
                                            FunctLoopWsConfigAddrsAb, FunctLoopWsConfigAddrsDc,
                                            FunctLoopWsConfigStridesAb, FunctLoopWsConfigStridesDc};
  assign conv_en   = conv_busy || (cmd_valid_i && conv_word);
  assign mm_en     = mm_busy || (conv_valid && mm_word);

  clock_gate u_conv_cg (.clk_i, .en_i (conv_en), .clk_o (clk_conv));
  clock_gate u_mm_cg   (.clk_i, .en_i (mm_en),   .clk_o (clk_mm));

  loop_conv #(
    .DIM(DIM), .SP_ROWS(SP_ROWS), .ACC_ROWS(ACC_ROWS), .MAX_BLOCK_LEN(MAX_BLOCK_LEN),
    .MAX_BLOCK_LEN_ACC(MAX_BLOCK_LEN_ACC)
  ) u_loop_conv (
    .clk_i (clk_conv), .rst_ni,
    .cmd_valid_i, .cmd_ready_o, .cmd_i (cmd),
    .out_valid_o (conv_valid), .out_ready_i (conv_ready), .out_o (conv_cmd),
    .room_i (room), .out_free_i (mm_free), .busy_o (conv_busy)
  );

  loop_matmul #(
    .DIM(DIM), .SP_ROWS(SP_ROWS), .ACC_ROWS(ACC_ROWS), .MAX_BLOCK_LEN(MAX_BLOCK_LEN),
    .MAX_BLOCK_LEN_ACC(MAX_BLOCK_LEN_ACC), .ST_BLOCKS(ST_BLOCKS)
  ) u_loop_matmul (
    .clk_i (clk_mm), .rst_ni,
    .cmd_valid_i (conv_valid), .cmd_ready_o (conv_ready), .cmd_i (conv_cmd),
    .out_valid_o (mm_valid), .out_ready_i (mm_ready), .out_o (mm_cmd),
    .room_i (room), .busy_o (mm_busy)
  );

  // LoopMatmul passes LoopConv's commands on while it unrolls no loop of its own
  assign mm_free = !mm_busy;

  // idle: nothing left to dispatch, and nothing left to unroll
  assign idle_o = disp_idle && !conv_busy && !mm_busy;

  dispatch #(
    .LDQ(LD_QUEUE), .EXQ(EX_QUEUE), .STQ(ST_QUEUE), .DIM(DIM), .SP_ROWS(SP_ROWS),
    .ACC_ROWS(ACC_ROWS)
  ) u_dispatch (
    .clk_i, .rst_ni,
    .cmd_valid_i (mm_valid), .cmd_ready_o (mm_ready), .cmd_i (mm_cmd),
    .iss_valid_o (iss_valid), .iss_ready_i (iss_ready), .iss_o (iss), .iss_pre_o (iss_pre),
    .done_i (done),
    .idle_o (disp_idle), .room_o (room),
    .stall_hazard_o (stall_hazard), .stall_queue_full_o (stall_queue_full),
    .hazard_o (hazard), .starved_o (starved),
    .ev_disp_valid_o, .ev_disp_seq_o, .ev_issue_seq_o, .slot_seq_o (ev_slot_seq_o),
    .dbg_cand_deps_o, .dbg_cand_slot_o, .dbg_waiting_o, .dbg_issued_o, .dbg_fence_o,
    .occupancy_o (rs_count_o)
  );

  load_unit #(
    .DIM(DIM), .MAX_BLOCK_LEN(MAX_BLOCK_LEN), .SP_ROWS(SP_ROWS), .ACC_ROWS(ACC_ROWS),
    .LDQ(LD_QUEUE), .N(N)
  ) u_load (
    .clk_i, .rst_ni,
    .iss_valid_i (iss_valid[LD]), .iss_ready_o (iss_ready[LD]), .iss_i (iss[LD]),
    .done_o (done_ld),
    .rd_req_valid_o (dma_rd_req_valid_o), .rd_req_ready_i (dma_rd_req_ready_i),
    .rd_req_o (rd_req),
    .rd_resp_valid_i (dma_rd_resp_valid_i), .rd_resp_ready_o (dma_rd_resp_ready_o),
    .rd_resp_tag_i (dma_tag_t'(dma_rd_resp_tag_i)), .rd_resp_data_i (dma_rd_resp_data_i),
    .sp_o (sp[SP_LD]), .sp_gnt_i (sp_gnt[SP_LD]),
    .acc_o (acc[ACC_LD]), .acc_gnt_i (acc_gnt[ACC_LD]),
    .dma_wait_o (ld_dma_wait), .stack_o (ustack[LD]), .outstanding_o (dbg_ld_outstanding_o)
  );

  execute_unit #(
    .DIM(DIM), .SP_ROWS(SP_ROWS), .ACC_ROWS(ACC_ROWS), .N(N), .DATAFLOWS(DATAFLOWS)
  ) u_execute (
    .clk_i, .rst_ni,
    .iss_valid_i (iss_valid[EX]), .iss_ready_o (iss_ready[EX]), .iss_i (iss[EX]),
    .iss_pre_i (iss_pre),
    .done_o (done_ex),
    .sp_rd_o (sp[SP_ST-1:SP_EX_RD]), .sp_rd_gnt_i (sp_gnt[SP_ST-1:SP_EX_RD]),
    .sp_rd_data_i (sp_rdata[SP_ST-1:SP_EX_RD]),
    .sp_wr_o (sp[SP_EX_WR]), .acc_wr_o (acc[ACC_EX_WR]),
    .mesh_busy_o (mesh_busy), .stack_o (ustack[EX]), .dbg_state_o (dbg_ex_state_o)
  );

  store_unit #(
    .DIM(DIM), .MAX_BLOCK_LEN(MAX_BLOCK_LEN), .SP_ROWS(SP_ROWS), .ACC_ROWS(ACC_ROWS), .N(N),
    .STORE_REQUANT(STORE_REQUANT), .STORE_COL_SCALES(STORE_COL_SCALES), .NORM_STATS(NORM_STATS)
  ) u_store (
    .clk_i, .rst_ni,
    .iss_valid_i (iss_valid[ST]), .iss_ready_o (iss_ready[ST]), .iss_i (iss[ST]),
    .done_o (done_st),
    .sp_o (sp[SP_ST]), .sp_gnt_i (sp_gnt[SP_ST]), .sp_rdata_i (sp_rdata[SP_ST]),
    .acc_o (acc[ACC_ST]), .acc_gnt_i (acc_gnt[ACC_ST]), .acc_rdata_i (acc_rdata[ACC_ST]),
    .wr_req_valid_o (dma_wr_req_valid_o), .wr_req_ready_i (dma_wr_req_ready_i),
    .wr_req_o (wr_req), .wr_req_data_o (dma_wr_req_data_o),
    .wr_ack_valid_i (dma_wr_ack_valid_i), .wr_ack_tag_i (dma_tag_t'(dma_wr_ack_tag_i)),
    .dma_wait_o (st_dma_wait), .stack_o (ustack[ST]), .outstanding_o (dbg_st_outstanding_o)
  );

  // the harness sees the DMA requests as plain ports
  assign dma_rd_req_addr_o = rd_req.addr;
  assign dma_rd_req_len_o  = rd_req.len;
  assign dma_rd_req_tag_o  = rd_req.tag;
  assign dma_wr_req_addr_o = wr_req.addr;
  assign dma_wr_req_len_o  = wr_req.len;
  assign dma_wr_req_tag_o  = wr_req.tag;

  // the scratchpad (int8 lanes) and the accumulator (int32 lanes, writes may add)
  local_mem #(
    .DIM(DIM), .ROWS(SP_ROWS), .BANKS(SP_BANKS), .LANE_W(8), .ACCUM(1'b0), .NREQ(SP_NREQ)
  ) u_sp (
    .clk_i, .req_i (sp), .gnt_o (sp_gnt), .rdata_o (sp_rdata), .conflict_o (sp_conflict)
  );
  local_mem #(
    .DIM(DIM), .ROWS(ACC_ROWS), .BANKS(ACC_BANKS), .LANE_W(32), .ACCUM(1'b1), .NREQ(ACC_NREQ)
  ) u_acc (
    .clk_i, .req_i (acc), .gnt_o (acc_gnt), .rdata_o (acc_rdata), .conflict_o (acc_conflict)
  );

  assign done             = done_ld | done_ex | done_st;
  assign ev_issue_o       = iss_valid & iss_ready;
  assign ev_done_o        = done;
  assign dbg_unit_ready_o = iss_ready;

  // ---- cycle stacks -----------------------------------------------------------------
  // Per unit (in dispatch's port order, as isa/opcodes.py STACK_UNITS), the categories that
  // apply this cycle; the cycle is charged to the first of them in stack_e order, which is
  // the precedence of isa/opcodes.py STACK. Idle always applies, so each cycle counts once.
  // The first is the lowest set bit (x & -x): one-hot, the unit's stack counters to step.
  logic [2:0][NumStack-1:0] applies, charged;
  always_comb begin
    for (int u = 0; u < 3; u++) begin
      applies[u]                 = '0;
      applies[u][StackBank]      = ustack[u].bank;
      applies[u][StackDma]       = ustack[u].dma;
      applies[u][StackBusy]      = ustack[u].busy;
      applies[u][StackHazard]    = hazard[u];
      applies[u][StackQueueFull] = starved[u];
      applies[u][StackIdle]      = 1'b1;
      charged[u] = applies[u] & (~applies[u] + NumStack'(1));
    end
  end

  // ---- performance counters -------------------------------------------------------
  // which counters count this cycle; each counts by one, the DMA byte counters by the
  // request's length. Each counter has its own next value and enable (g_ctr), so that
  // only the counters that move are updated. Each is a register of its own: one packed vector
  // of all, written by a process each, was copied whole twice a cycle in a simulation.
  logic [NumCounters-1:0] ctr_en;
  always_comb begin
    ctr_en                       = '0;
    ctr_en[CtrCycles]            = 1'b1;
    ctr_en[CtrLoadBusy]          = ustack[LD].busy;
    ctr_en[CtrExecBusy]          = ustack[EX].busy;
    ctr_en[CtrStoreBusy]         = ustack[ST].busy;
    ctr_en[CtrMeshBusy]          = mesh_busy;
    ctr_en[CtrStallHazard]       = stall_hazard;
    ctr_en[CtrStallBankConflict] = sp_conflict || acc_conflict;
    ctr_en[CtrStallQueueFull]    = stall_queue_full;
    ctr_en[CtrStallDmaWait]      = ld_dma_wait || st_dma_wait;
    ctr_en[CtrDmaBytesRead]      = dma_rd_req_valid_o && dma_rd_req_ready_i;
    ctr_en[CtrDmaBytesWritten]   = dma_wr_req_valid_o && dma_wr_req_ready_i;
    for (int u = 0; u < 3; u++) ctr_en[CtrStackFirst + u * NumStack +: NumStack] = charged[u];
  end

  for (genvar i = 0; i < NumCounters; i++) begin : g_ctr
    logic [63:0] ctr_q, ctr_d;

    always_comb begin
      ctr_d = ctr_q + ((i == int'(CtrDmaBytesRead)) ? 64'(rd_req.len)
                       : (i == int'(CtrDmaBytesWritten)) ? 64'(wr_req.len) : 64'd1);
    end

    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) begin
        ctr_q <= '0;
      end else if (ctr_en[i]) begin
        ctr_q <= ctr_d;
      end
    end
    assign ctr_o[i] = ctr_q;
  end

  // ---- assumptions ----------------------------------------------------------------
  // the DMA tag ports are 32 bits, a dma_tag_t each
  if ($bits(dma_tag_t) != 32) begin : g_tag_check
    $error("accel_top: dma_tag_t is %0d bits, the DMA tag ports 32", $bits(dma_tag_t));
  end

  // Checked at every clock edge out of reset (enabled from an always_ff with the registers'
  // asynchronous reset: rst_ni stays an asynchronous reset only; a `disable iff (!rst_ni)`
  // would read it synchronously). Immediate assertions at the clock edge read the values the
  // registers take their next state from, as concurrent ones would, without a simulation
  // keeping a sampled copy of every signal they name.
`ifndef SYNTHESIS  // checks for simulation; synthesis (Yosys) elaborates none
  always_ff @(posedge clk_i or negedge rst_ni) begin : p_assumptions
    if (rst_ni) begin
      // result writes have the highest priority: the execute unit cannot wait for a bank
      assert (!sp[SP_EX_WR].req || sp_gnt[SP_EX_WR])
        else $error("accel_top: an execute result write to the scratchpad was not granted");
      assert (!acc[ACC_EX_WR].req || acc_gnt[ACC_EX_WR])
        else $error("accel_top: an execute result write to the accumulator was not granted");
      // no two units complete the same slot
      assert (((done_ld & done_ex) | (done_ld & done_st) | (done_ex & done_st)) == '0)
        else $error("accel_top: two units completed the same slot");
    end
  end
`endif
endmodule
