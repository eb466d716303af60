// Top level of the accelerator: dispatch, load / execute / store units, the
// local memories and the performance counters. Instructions come in through
// cmd_*; the DRAM (latency, beats, the one memory port) is modelled by the
// harness behind the dma_* request/response ports.
//
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
  localparam int N             = LD_QUEUE + EX_QUEUE + ST_QUEUE,
  localparam int SLOT_W        = $clog2(N),
  localparam int RESP_W        = DIM * MAX_BLOCK_LEN * 32
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
  output logic [N-1:0]         dbg_issued_o,
  output logic                 dbg_fence_o,
  output logic [2:0]           dbg_unit_ready_o,
  output logic [15:0]          dbg_ld_outstanding_o,
  output logic [15:0]          dbg_st_outstanding_o,
  output logic [3:0]           dbg_ex_state_o
);
  localparam int SP_AW    = $clog2(SP_ROWS);
  localparam int ACC_AW   = $clog2(ACC_ROWS);
  // local memory requesters, highest priority first (see the note above)
  localparam int SP_NREQ  = 6, ACC_NREQ = 3;
  localparam int SP_EX_WR = 0, SP_LD = 1, SP_EX_RD = 2, SP_ST = 5;   // execute reads 2..4
  localparam int ACC_EX_WR = 0, ACC_LD = 1, ACC_ST = 2;
  localparam int LD = 0, EX = 1, ST = 2;   // issue ports of dispatch

  logic [2:0]              iss_valid, iss_ready;
  logic [2:0][SLOT_W-1:0]  iss_slot;
  insn_t [2:0]             iss;
  preload_t                iss_pre;
  logic [N-1:0]            done_ld, done_ex, done_st, done;
  logic                    stall_hazard, stall_queue_full, conflict;
  logic [2:0]              hazard, starved;
  unit_stack_t [2:0]       ustack;
  logic                    ld_busy, ld_dma_wait, ex_busy, mesh_busy, st_busy, st_dma_wait;
  dma_req_t                rd_req, wr_req;

  logic [SP_NREQ-1:0]              sp_req, sp_we, sp_gnt;
  logic [SP_NREQ-1:0][SP_AW-1:0]   sp_row;
  logic [SP_NREQ-1:0][DIM*8-1:0]   sp_wdata, sp_rdata;
  logic [SP_NREQ-1:0][DIM-1:0]     sp_wmask;
  logic [ACC_NREQ-1:0]             acc_req, acc_we, acc_acc, acc_gnt;
  logic [ACC_NREQ-1:0][ACC_AW-1:0] acc_row;
  logic [ACC_NREQ-1:0][DIM*32-1:0] acc_wdata, acc_rdata;
  logic [ACC_NREQ-1:0][DIM-1:0]    acc_wmask;

  dispatch #(
    .LDQ(LD_QUEUE), .EXQ(EX_QUEUE), .STQ(ST_QUEUE), .DIM(DIM), .SP_ROWS(SP_ROWS),
    .ACC_ROWS(ACC_ROWS)
  ) u_dispatch (
    .clk_i, .rst_ni,
    .cmd_valid_i, .cmd_ready_o,
    .cmd_i ('{funct: funct_e'(cmd_funct_i), rs1: cmd_rs1_i, rs2: cmd_rs2_i}),
    .iss_valid_o (iss_valid), .iss_ready_i (iss_ready), .iss_slot_o (iss_slot),
    .iss_o (iss), .iss_pre_o (iss_pre),
    .done_i (done),
    .idle_o,
    .stall_hazard_o (stall_hazard), .stall_queue_full_o (stall_queue_full),
    .hazard_o (hazard), .starved_o (starved),
    .ev_disp_valid_o, .ev_disp_seq_o, .ev_issue_seq_o, .slot_seq_o (ev_slot_seq_o),
    .dbg_cand_deps_o, .dbg_cand_slot_o, .dbg_waiting_o, .dbg_issued_o, .dbg_fence_o
  );

  load_unit #(
    .DIM(DIM), .MAX_BLOCK_LEN(MAX_BLOCK_LEN), .SP_ROWS(SP_ROWS), .ACC_ROWS(ACC_ROWS),
    .LDQ(LD_QUEUE), .N(N)
  ) u_load (
    .clk_i, .rst_ni,
    .iss_valid_i (iss_valid[LD]), .iss_ready_o (iss_ready[LD]), .iss_slot_i (iss_slot[LD]),
    .iss_i (iss[LD]),
    .done_o (done_ld),
    .rd_req_valid_o (dma_rd_req_valid_o), .rd_req_ready_i (dma_rd_req_ready_i),
    .rd_req_o (rd_req),
    .rd_resp_valid_i (dma_rd_resp_valid_i), .rd_resp_ready_o (dma_rd_resp_ready_o),
    .rd_resp_tag_i (dma_tag_t'(dma_rd_resp_tag_i)), .rd_resp_data_i (dma_rd_resp_data_i),
    .sp_req_o (sp_req[SP_LD]), .sp_row_o (sp_row[SP_LD]), .sp_wdata_o (sp_wdata[SP_LD]),
    .sp_wmask_o (sp_wmask[SP_LD]), .sp_gnt_i (sp_gnt[SP_LD]),
    .acc_req_o (acc_req[ACC_LD]), .acc_acc_o (acc_acc[ACC_LD]), .acc_row_o (acc_row[ACC_LD]),
    .acc_wdata_o (acc_wdata[ACC_LD]), .acc_wmask_o (acc_wmask[ACC_LD]),
    .acc_gnt_i (acc_gnt[ACC_LD]),
    .busy_o (ld_busy), .dma_wait_o (ld_dma_wait), .stack_o (ustack[LD]),
    .outstanding_o (dbg_ld_outstanding_o)
  );

  execute_unit #(
    .DIM(DIM), .SP_ROWS(SP_ROWS), .ACC_ROWS(ACC_ROWS), .N(N)
  ) u_execute (
    .clk_i, .rst_ni,
    .iss_valid_i (iss_valid[EX]), .iss_ready_o (iss_ready[EX]), .iss_slot_i (iss_slot[EX]),
    .iss_i (iss[EX]), .iss_pre_i (iss_pre),
    .done_o (done_ex),
    .sp_rd_req_o (sp_req[SP_ST-1:SP_EX_RD]), .sp_rd_row_o (sp_row[SP_ST-1:SP_EX_RD]),
    .sp_rd_gnt_i (sp_gnt[SP_ST-1:SP_EX_RD]), .sp_rd_data_i (sp_rdata[SP_ST-1:SP_EX_RD]),
    .sp_wr_req_o (sp_req[SP_EX_WR]), .sp_wr_row_o (sp_row[SP_EX_WR]),
    .sp_wr_data_o (sp_wdata[SP_EX_WR]), .sp_wr_mask_o (sp_wmask[SP_EX_WR]),
    .acc_wr_req_o (acc_req[ACC_EX_WR]), .acc_wr_acc_o (acc_acc[ACC_EX_WR]),
    .acc_wr_row_o (acc_row[ACC_EX_WR]), .acc_wr_data_o (acc_wdata[ACC_EX_WR]),
    .acc_wr_mask_o (acc_wmask[ACC_EX_WR]),
    .busy_o (ex_busy), .mesh_busy_o (mesh_busy), .stack_o (ustack[EX]),
    .dbg_state_o (dbg_ex_state_o)
  );

  store_unit #(
    .DIM(DIM), .SP_ROWS(SP_ROWS), .ACC_ROWS(ACC_ROWS), .N(N)
  ) u_store (
    .clk_i, .rst_ni,
    .iss_valid_i (iss_valid[ST]), .iss_ready_o (iss_ready[ST]), .iss_slot_i (iss_slot[ST]),
    .iss_i (iss[ST]),
    .done_o (done_st),
    .sp_req_o (sp_req[SP_ST]), .sp_row_o (sp_row[SP_ST]), .sp_gnt_i (sp_gnt[SP_ST]),
    .sp_rdata_i (sp_rdata[SP_ST]),
    .acc_req_o (acc_req[ACC_ST]), .acc_row_o (acc_row[ACC_ST]), .acc_gnt_i (acc_gnt[ACC_ST]),
    .acc_rdata_i (acc_rdata[ACC_ST]),
    .wr_req_valid_o (dma_wr_req_valid_o), .wr_req_ready_i (dma_wr_req_ready_i),
    .wr_req_o (wr_req), .wr_req_data_o (dma_wr_req_data_o),
    .wr_ack_valid_i (dma_wr_ack_valid_i), .wr_ack_tag_i (dma_tag_t'(dma_wr_ack_tag_i)),
    .busy_o (st_busy), .dma_wait_o (st_dma_wait), .stack_o (ustack[ST]),
    .outstanding_o (dbg_st_outstanding_o)
  );

  // the harness sees the DMA requests as plain ports
  assign dma_rd_req_addr_o = rd_req.addr;
  assign dma_rd_req_len_o  = rd_req.len;
  assign dma_rd_req_tag_o  = rd_req.tag;
  assign dma_wr_req_addr_o = wr_req.addr;
  assign dma_wr_req_len_o  = wr_req.len;
  assign dma_wr_req_tag_o  = wr_req.tag;

  // write enables and the unused write ports of read-only requesters
  always_comb begin
    sp_we  = '0;
    acc_we = '0;
    sp_we[SP_EX_WR]   = 1'b1;
    sp_we[SP_LD]      = 1'b1;
    acc_we[ACC_EX_WR] = 1'b1;
    acc_we[ACC_LD]    = 1'b1;
  end
  assign sp_wdata[SP_ST:SP_EX_RD] = '0;
  assign sp_wmask[SP_ST:SP_EX_RD] = '0;
  assign acc_wdata[ACC_ST]        = '0;
  assign acc_wmask[ACC_ST]        = '0;
  assign acc_acc[ACC_ST]          = 1'b0;

  local_mem #(
    .DIM(DIM), .SP_ROWS(SP_ROWS), .SP_BANKS(SP_BANKS), .ACC_ROWS(ACC_ROWS),
    .ACC_BANKS(ACC_BANKS), .SP_NREQ(SP_NREQ), .ACC_NREQ(ACC_NREQ)
  ) u_mem (
    .clk_i,
    .sp_req_i (sp_req), .sp_we_i (sp_we), .sp_row_i (sp_row), .sp_wdata_i (sp_wdata),
    .sp_wmask_i (sp_wmask), .sp_gnt_o (sp_gnt), .sp_rdata_o (sp_rdata),
    .acc_req_i (acc_req), .acc_we_i (acc_we), .acc_acc_i (acc_acc), .acc_row_i (acc_row),
    .acc_wdata_i (acc_wdata), .acc_wmask_i (acc_wmask), .acc_gnt_o (acc_gnt),
    .acc_rdata_o (acc_rdata),
    .conflict_o (conflict)
  );

  assign done             = done_ld | done_ex | done_st;
  assign ev_issue_o       = iss_valid & iss_ready;
  assign ev_done_o        = done;
  assign dbg_unit_ready_o = iss_ready;

  // ---- cycle stacks -----------------------------------------------------------------
  // Per unit (in dispatch's port order, as isa/opcodes.py STACK_UNITS), the categories that
  // apply this cycle; the cycle is charged to the first of them in stack_e order, which is
  // the precedence of isa/opcodes.py STACK. Idle always applies, so each cycle counts once.
  stack_e [2:0] charged;
  always_comb begin
    for (int u = 0; u < 3; u++) begin
      logic [NumStack-1:0] applies;
      applies                 = '0;
      applies[StackBank]      = ustack[u].bank;
      applies[StackDma]       = ustack[u].dma;
      applies[StackBusy]      = ustack[u].busy;
      applies[StackHazard]    = hazard[u];
      applies[StackQueueFull] = starved[u];
      applies[StackIdle]      = 1'b1;
      charged[u] = StackIdle;
      for (int c = NumStack - 1; c >= 0; c--) begin
        if (applies[c]) charged[u] = stack_e'(c);
      end
    end
  end

  // ---- performance counters -------------------------------------------------------
  // which counters count this cycle; each counts by one, the DMA byte counters by the
  // request's length. Per-counter enables keep the update to the counters that move.
  logic [NumCounters-1:0]       ctr_en;
  logic [NumCounters-1:0][63:0] ctr_q;
  always_comb begin
    ctr_en                       = '0;
    ctr_en[CtrCycles]            = 1'b1;
    ctr_en[CtrLoadBusy]          = ld_busy;
    ctr_en[CtrExecBusy]          = ex_busy;
    ctr_en[CtrStoreBusy]         = st_busy;
    ctr_en[CtrMeshBusy]          = mesh_busy;
    ctr_en[CtrStallHazard]       = stall_hazard;
    ctr_en[CtrStallBankConflict] = conflict;
    ctr_en[CtrStallQueueFull]    = stall_queue_full;
    ctr_en[CtrStallDmaWait]      = ld_dma_wait || st_dma_wait;
    ctr_en[CtrDmaBytesRead]      = dma_rd_req_valid_o && dma_rd_req_ready_i;
    ctr_en[CtrDmaBytesWritten]   = dma_wr_req_valid_o && dma_wr_req_ready_i;
    for (int u = 0; u < 3; u++) ctr_en[CtrStackFirst + u * NumStack + int'(charged[u])] = 1'b1;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ctr_q <= '0;
    end else begin
      for (int i = 0; i < NumCounters; i++) begin
        if (ctr_en[i]) begin
          ctr_q[i] <= ctr_q[i] + ((i == int'(CtrDmaBytesRead)) ? 64'(rd_req.len)
                                  : (i == int'(CtrDmaBytesWritten)) ? 64'(wr_req.len) : 64'd1);
        end
      end
    end
  end
  assign ctr_o = ctr_q;

  // ---- assumptions ----------------------------------------------------------------
  // result writes have the highest priority: the execute unit cannot wait for a bank
  assert property (@(posedge clk_i) disable iff (!rst_ni) sp_req[SP_EX_WR] |-> sp_gnt[SP_EX_WR])
    else $error("accel_top: an execute result write to the scratchpad was not granted");
  assert property (@(posedge clk_i) disable iff (!rst_ni) acc_req[ACC_EX_WR] |-> acc_gnt[ACC_EX_WR])
    else $error("accel_top: an execute result write to the accumulator was not granted");
  // no two units complete the same slot
  assert property (@(posedge clk_i) disable iff (!rst_ni)
                   ((done_ld & done_ex) | (done_ld & done_st) | (done_ex & done_st)) == '0)
    else $error("accel_top: two units completed the same slot");
endmodule
