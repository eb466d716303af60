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
  parameter int DMA_BEAT_BYTES = 4,    // used by the harness's DRAM model
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
  // status
  output logic                 idle_o,
  output logic [63:0]          ctr_cycles_o,
  output logic [63:0]          ctr_load_busy_o,
  output logic [63:0]          ctr_exec_busy_o,
  output logic [63:0]          ctr_store_busy_o,
  output logic [63:0]          ctr_mesh_busy_o,
  output logic [63:0]          ctr_dma_bytes_read_o,
  output logic [63:0]          ctr_dma_bytes_written_o,
  output logic [63:0]          ctr_stall_hazard_o,
  output logic [63:0]          ctr_stall_bank_conflict_o,
  output logic [63:0]          ctr_stall_queue_full_o,
  output logic [63:0]          ctr_stall_dma_wait_o,
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
  output logic [N-1:0]         dbg_valid_o,
  output logic [N-1:0]         dbg_issued_o,
  output logic [N-1:0][6:0]    dbg_funct_o,
  output logic                 dbg_fence_o,
  output logic [2:0]           dbg_unit_ready_o,
  output logic [15:0]          dbg_ld_outstanding_o,
  output logic [15:0]          dbg_st_outstanding_o,
  output logic [3:0]           dbg_ex_state_o
);
  localparam int SP_AW  = $clog2(SP_ROWS);
  localparam int ACC_AW = $clog2(ACC_ROWS);
  localparam int SP_NREQ = 6, ACC_NREQ = 3;

  logic [2:0]              iss_valid, iss_ready;
  logic [2:0][SLOT_W-1:0]  iss_slot;
  logic [2:0][6:0]         iss_funct;
  logic [2:0][63:0]        iss_rs1, iss_rs2;
  logic [63:0]             iss_pre1, iss_pre2;
  logic [N-1:0]            done_ld, done_ex, done_st, done;
  logic                    stall_hazard, stall_queue_full, conflict;
  logic                    ld_busy, ld_dma_wait, ex_busy, mesh_busy, st_busy, st_dma_wait;

  logic [SP_NREQ-1:0]              sp_req, sp_we, sp_gnt;
  logic [SP_NREQ-1:0][SP_AW-1:0]   sp_row;
  logic [SP_NREQ-1:0][DIM*8-1:0]   sp_wdata, sp_rdata;
  logic [SP_NREQ-1:0][DIM-1:0]     sp_wmask;
  logic [ACC_NREQ-1:0]             acc_req, acc_we, acc_acc, acc_gnt;
  logic [ACC_NREQ-1:0][ACC_AW-1:0] acc_row;
  logic [ACC_NREQ-1:0][DIM*32-1:0] acc_wdata, acc_rdata;
  logic [ACC_NREQ-1:0][DIM-1:0]    acc_wmask;

  dispatch #(
    .LDQ(LD_QUEUE), .EXQ(EX_QUEUE), .STQ(ST_QUEUE), .DIM(DIM), .SP_ROWS(SP_ROWS), .ACC_ROWS(ACC_ROWS)
  ) u_dispatch (
    .clk_i, .rst_ni,
    .cmd_valid_i, .cmd_ready_o, .cmd_funct_i, .cmd_rs1_i, .cmd_rs2_i,
    .iss_valid_o (iss_valid), .iss_ready_i (iss_ready), .iss_slot_o (iss_slot),
    .iss_funct_o (iss_funct), .iss_rs1_o (iss_rs1), .iss_rs2_o (iss_rs2),
    .iss_pre1_o (iss_pre1), .iss_pre2_o (iss_pre2),
    .done_i (done),
    .idle_o,
    .stall_hazard_o (stall_hazard), .stall_queue_full_o (stall_queue_full),
    .ev_disp_valid_o, .ev_disp_seq_o, .ev_issue_seq_o, .slot_seq_o (ev_slot_seq_o),
    .dbg_cand_deps_o, .dbg_cand_slot_o, .dbg_waiting_o, .dbg_valid_o, .dbg_issued_o,
    .dbg_funct_o, .dbg_fence_o
  );

  load_unit #(
    .DIM(DIM), .MAX_BLOCK_LEN(MAX_BLOCK_LEN), .SP_ROWS(SP_ROWS), .ACC_ROWS(ACC_ROWS), .LDQ(LD_QUEUE), .N(N)
  ) u_load (
    .clk_i, .rst_ni,
    .iss_valid_i (iss_valid[0]), .iss_ready_o (iss_ready[0]), .iss_slot_i (iss_slot[0]),
    .iss_funct_i (iss_funct[0]), .iss_rs1_i (iss_rs1[0]), .iss_rs2_i (iss_rs2[0]),
    .done_o (done_ld),
    .rd_req_valid_o (dma_rd_req_valid_o), .rd_req_ready_i (dma_rd_req_ready_i),
    .rd_req_addr_o (dma_rd_req_addr_o), .rd_req_len_o (dma_rd_req_len_o), .rd_req_tag_o (dma_rd_req_tag_o),
    .rd_resp_valid_i (dma_rd_resp_valid_i), .rd_resp_ready_o (dma_rd_resp_ready_o),
    .rd_resp_tag_i (dma_rd_resp_tag_i), .rd_resp_data_i (dma_rd_resp_data_i),
    .sp_req_o (sp_req[1]), .sp_row_o (sp_row[1]), .sp_wdata_o (sp_wdata[1]), .sp_wmask_o (sp_wmask[1]),
    .sp_gnt_i (sp_gnt[1]),
    .acc_req_o (acc_req[1]), .acc_acc_o (acc_acc[1]), .acc_row_o (acc_row[1]), .acc_wdata_o (acc_wdata[1]),
    .acc_wmask_o (acc_wmask[1]), .acc_gnt_i (acc_gnt[1]),
    .busy_o (ld_busy), .dma_wait_o (ld_dma_wait), .outstanding_o (dbg_ld_outstanding_o)
  );

  execute_unit #(
    .DIM(DIM), .SP_ROWS(SP_ROWS), .ACC_ROWS(ACC_ROWS), .N(N)
  ) u_execute (
    .clk_i, .rst_ni,
    .iss_valid_i (iss_valid[1]), .iss_ready_o (iss_ready[1]), .iss_slot_i (iss_slot[1]),
    .iss_funct_i (iss_funct[1]), .iss_rs1_i (iss_rs1[1]), .iss_rs2_i (iss_rs2[1]),
    .iss_pre1_i (iss_pre1), .iss_pre2_i (iss_pre2),
    .done_o (done_ex),
    .sp_rd_req_o (sp_req[4:2]), .sp_rd_row_o (sp_row[4:2]), .sp_rd_gnt_i (sp_gnt[4:2]),
    .sp_rd_data_i (sp_rdata[4:2]),
    .sp_wr_req_o (sp_req[0]), .sp_wr_row_o (sp_row[0]), .sp_wr_data_o (sp_wdata[0]), .sp_wr_mask_o (sp_wmask[0]),
    .acc_wr_req_o (acc_req[0]), .acc_wr_acc_o (acc_acc[0]), .acc_wr_row_o (acc_row[0]),
    .acc_wr_data_o (acc_wdata[0]), .acc_wr_mask_o (acc_wmask[0]),
    .busy_o (ex_busy), .mesh_busy_o (mesh_busy), .dbg_state_o (dbg_ex_state_o)
  );

  store_unit #(
    .DIM(DIM), .SP_ROWS(SP_ROWS), .ACC_ROWS(ACC_ROWS), .N(N)
  ) u_store (
    .clk_i, .rst_ni,
    .iss_valid_i (iss_valid[2]), .iss_ready_o (iss_ready[2]), .iss_slot_i (iss_slot[2]),
    .iss_funct_i (iss_funct[2]), .iss_rs1_i (iss_rs1[2]), .iss_rs2_i (iss_rs2[2]),
    .done_o (done_st),
    .sp_req_o (sp_req[5]), .sp_row_o (sp_row[5]), .sp_gnt_i (sp_gnt[5]), .sp_rdata_i (sp_rdata[5]),
    .acc_req_o (acc_req[2]), .acc_row_o (acc_row[2]), .acc_gnt_i (acc_gnt[2]), .acc_rdata_i (acc_rdata[2]),
    .wr_req_valid_o (dma_wr_req_valid_o), .wr_req_ready_i (dma_wr_req_ready_i),
    .wr_req_addr_o (dma_wr_req_addr_o), .wr_req_len_o (dma_wr_req_len_o), .wr_req_tag_o (dma_wr_req_tag_o),
    .wr_req_data_o (dma_wr_req_data_o),
    .wr_ack_valid_i (dma_wr_ack_valid_i), .wr_ack_tag_i (dma_wr_ack_tag_i),
    .busy_o (st_busy), .dma_wait_o (st_dma_wait), .outstanding_o (dbg_st_outstanding_o)
  );

  // write enables and the unused write ports of read-only requesters
  assign sp_we          = 6'b000011;
  assign acc_we         = 3'b011;
  assign sp_wdata[5:2]  = '0;
  assign sp_wmask[5:2]  = '0;
  assign acc_wdata[2]   = '0;
  assign acc_wmask[2]   = '0;
  assign acc_acc[2]     = 1'b0;

  local_mem #(
    .DIM(DIM), .SP_ROWS(SP_ROWS), .SP_BANKS(SP_BANKS), .ACC_ROWS(ACC_ROWS), .ACC_BANKS(ACC_BANKS),
    .SP_NREQ(SP_NREQ), .ACC_NREQ(ACC_NREQ)
  ) u_mem (
    .clk_i,
    .sp_req_i (sp_req), .sp_we_i (sp_we), .sp_row_i (sp_row), .sp_wdata_i (sp_wdata), .sp_wmask_i (sp_wmask),
    .sp_gnt_o (sp_gnt), .sp_rdata_o (sp_rdata),
    .acc_req_i (acc_req), .acc_we_i (acc_we), .acc_acc_i (acc_acc), .acc_row_i (acc_row),
    .acc_wdata_i (acc_wdata), .acc_wmask_i (acc_wmask), .acc_gnt_o (acc_gnt), .acc_rdata_o (acc_rdata),
    .conflict_o (conflict)
  );

  assign done = done_ld | done_ex | done_st;
  assign ev_issue_o = iss_valid & iss_ready;
  assign ev_done_o  = done;
  assign dbg_unit_ready_o = iss_ready;

  // ---- performance counters -------------------------------------------------------
  logic [63:0] c_cycles_q, c_ld_q, c_ex_q, c_st_q, c_mesh_q, c_rd_q, c_wr_q, c_haz_q, c_bank_q, c_qf_q, c_dma_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      c_cycles_q <= '0; c_ld_q <= '0; c_ex_q <= '0; c_st_q <= '0; c_mesh_q <= '0; c_rd_q <= '0;
      c_wr_q <= '0; c_haz_q <= '0; c_bank_q <= '0; c_qf_q <= '0; c_dma_q <= '0;
    end else begin
      c_cycles_q <= c_cycles_q + 64'd1;
      if (ld_busy)          c_ld_q   <= c_ld_q + 64'd1;
      if (ex_busy)          c_ex_q   <= c_ex_q + 64'd1;
      if (st_busy)          c_st_q   <= c_st_q + 64'd1;
      if (mesh_busy)        c_mesh_q <= c_mesh_q + 64'd1;
      if (stall_hazard)     c_haz_q  <= c_haz_q + 64'd1;
      if (conflict)         c_bank_q <= c_bank_q + 64'd1;
      if (stall_queue_full) c_qf_q   <= c_qf_q + 64'd1;
      if (ld_dma_wait || st_dma_wait) c_dma_q <= c_dma_q + 64'd1;
      if (dma_rd_req_valid_o && dma_rd_req_ready_i) c_rd_q <= c_rd_q + 64'(dma_rd_req_len_o);
      if (dma_wr_req_valid_o && dma_wr_req_ready_i) c_wr_q <= c_wr_q + 64'(dma_wr_req_len_o);
    end
  end
  assign ctr_cycles_o              = c_cycles_q;
  assign ctr_load_busy_o           = c_ld_q;
  assign ctr_exec_busy_o           = c_ex_q;
  assign ctr_store_busy_o          = c_st_q;
  assign ctr_mesh_busy_o           = c_mesh_q;
  assign ctr_dma_bytes_read_o      = c_rd_q;
  assign ctr_dma_bytes_written_o   = c_wr_q;
  assign ctr_stall_hazard_o        = c_haz_q;
  assign ctr_stall_bank_conflict_o = c_bank_q;
  assign ctr_stall_queue_full_o    = c_qf_q;
  assign ctr_stall_dma_wait_o      = c_dma_q;
endmodule
