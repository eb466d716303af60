// Scratchpad and accumulator: SP_BANKS / ACC_BANKS single-ported banks of
// contiguous rows, and the routing of every requester to the bank its row is in.
//
// Requesters address rows of the whole memory. A requester granted a read gets
// the row in *_rdata_o[i] the next cycle. Requesters that lose arbitration for a
// bank are not granted (conflict_o is set that cycle) and retry.
module local_mem #(
  parameter int DIM       = 4,
  parameter int SP_ROWS   = 256,
  parameter int SP_BANKS  = 2,
  parameter int ACC_ROWS  = 64,
  parameter int ACC_BANKS = 2,
  parameter int SP_NREQ   = 2,
  parameter int ACC_NREQ  = 2,
  localparam int SP_AW    = $clog2(SP_ROWS),
  localparam int ACC_AW   = $clog2(ACC_ROWS)
) (
  input  logic                            clk_i,
  input  logic [SP_NREQ-1:0]              sp_req_i,
  input  logic [SP_NREQ-1:0]              sp_we_i,
  input  logic [SP_NREQ-1:0][SP_AW-1:0]   sp_row_i,
  input  logic [SP_NREQ-1:0][DIM*8-1:0]   sp_wdata_i,
  input  logic [SP_NREQ-1:0][DIM-1:0]     sp_wmask_i,
  output logic [SP_NREQ-1:0]              sp_gnt_o,
  output logic [SP_NREQ-1:0][DIM*8-1:0]   sp_rdata_o,
  input  logic [ACC_NREQ-1:0]             acc_req_i,
  input  logic [ACC_NREQ-1:0]             acc_we_i,
  input  logic [ACC_NREQ-1:0]             acc_acc_i,
  input  logic [ACC_NREQ-1:0][ACC_AW-1:0] acc_row_i,
  input  logic [ACC_NREQ-1:0][DIM*32-1:0] acc_wdata_i,
  input  logic [ACC_NREQ-1:0][DIM-1:0]    acc_wmask_i,
  output logic [ACC_NREQ-1:0]             acc_gnt_o,
  output logic [ACC_NREQ-1:0][DIM*32-1:0] acc_rdata_o,
  output logic                            conflict_o
);
  localparam int SPB_ROWS  = SP_ROWS / SP_BANKS;
  localparam int ACCB_ROWS = ACC_ROWS / ACC_BANKS;
  localparam int SPB_AW    = (SPB_ROWS > 1) ? $clog2(SPB_ROWS) : 1;
  localparam int ACCB_AW   = (ACCB_ROWS > 1) ? $clog2(ACCB_ROWS) : 1;
  localparam int SPB_W     = (SP_BANKS > 1) ? $clog2(SP_BANKS) : 1;
  localparam int ACCB_W    = (ACC_BANKS > 1) ? $clog2(ACC_BANKS) : 1;

  logic [SP_NREQ-1:0][SPB_W-1:0]    sp_bank;
  logic [SP_NREQ-1:0][SPB_AW-1:0]   sp_brow;
  logic [SP_NREQ-1:0][SPB_W-1:0]    sp_rbank_q;
  logic [ACC_NREQ-1:0][ACCB_W-1:0]  acc_bank;
  logic [ACC_NREQ-1:0][ACCB_AW-1:0] acc_brow;
  logic [ACC_NREQ-1:0][ACCB_W-1:0]  acc_rbank_q;

  logic [SP_BANKS-1:0][SP_NREQ-1:0]   spb_req, spb_gnt;
  logic [SP_BANKS-1:0][DIM*8-1:0]     spb_rdata;
  logic [ACC_BANKS-1:0][ACC_NREQ-1:0] accb_req, accb_gnt;
  logic [ACC_BANKS-1:0][DIM*32-1:0]   accb_rdata;

  always_comb begin
    for (int i = 0; i < SP_NREQ; i++) begin
      sp_bank[i] = SPB_W'(32'(sp_row_i[i]) / SPB_ROWS);
      sp_brow[i] = SPB_AW'(32'(sp_row_i[i]) % SPB_ROWS);
    end
    for (int i = 0; i < ACC_NREQ; i++) begin
      acc_bank[i] = ACCB_W'(32'(acc_row_i[i]) / ACCB_ROWS);
      acc_brow[i] = ACCB_AW'(32'(acc_row_i[i]) % ACCB_ROWS);
    end
    for (int b = 0; b < SP_BANKS; b++) begin
      for (int i = 0; i < SP_NREQ; i++) spb_req[b][i] = sp_req_i[i] && (sp_bank[i] == SPB_W'(b));
    end
    for (int b = 0; b < ACC_BANKS; b++) begin
      for (int i = 0; i < ACC_NREQ; i++) begin
        accb_req[b][i] = acc_req_i[i] && (acc_bank[i] == ACCB_W'(b));
      end
    end
    for (int i = 0; i < SP_NREQ; i++) sp_gnt_o[i] = spb_gnt[sp_bank[i]][i];
    for (int i = 0; i < ACC_NREQ; i++) acc_gnt_o[i] = accb_gnt[acc_bank[i]][i];
    for (int i = 0; i < SP_NREQ; i++) sp_rdata_o[i] = spb_rdata[sp_rbank_q[i]];
    for (int i = 0; i < ACC_NREQ; i++) acc_rdata_o[i] = accb_rdata[acc_rbank_q[i]];
    conflict_o = ((sp_req_i & ~sp_gnt_o) != '0) || ((acc_req_i & ~acc_gnt_o) != '0);
  end

  always_ff @(posedge clk_i) begin
    for (int i = 0; i < SP_NREQ; i++) begin
      if (sp_req_i[i] && sp_gnt_o[i] && !sp_we_i[i]) sp_rbank_q[i] <= sp_bank[i];
    end
    for (int i = 0; i < ACC_NREQ; i++) begin
      if (acc_req_i[i] && acc_gnt_o[i] && !acc_we_i[i]) acc_rbank_q[i] <= acc_bank[i];
    end
  end

  for (genvar b = 0; b < SP_BANKS; b++) begin : g_sp
    ram_bank #(.ROWS(SPB_ROWS), .DIM(DIM), .LANE_W(8), .ACCUM(1'b0), .NREQ(SP_NREQ)) u_bank (
      .clk_i,
      .req_i   (spb_req[b]),
      .we_i    (sp_we_i),
      .acc_i   ('0),
      .addr_i  (sp_brow),
      .wdata_i (sp_wdata_i),
      .wmask_i (sp_wmask_i),
      .gnt_o   (spb_gnt[b]),
      .rdata_o (spb_rdata[b])
    );
  end

  for (genvar b = 0; b < ACC_BANKS; b++) begin : g_acc
    ram_bank #(.ROWS(ACCB_ROWS), .DIM(DIM), .LANE_W(32), .ACCUM(1'b1), .NREQ(ACC_NREQ)) u_bank (
      .clk_i,
      .req_i   (accb_req[b]),
      .we_i    (acc_we_i),
      .acc_i   (acc_acc_i),
      .addr_i  (acc_brow),
      .wdata_i (acc_wdata_i),
      .wmask_i (acc_wmask_i),
      .gnt_o   (accb_gnt[b]),
      .rdata_o (accb_rdata[b])
    );
  end
endmodule
