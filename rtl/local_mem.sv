// One local memory, the scratchpad or the accumulator: BANKS single-ported banks of
// contiguous rows of DIM lanes of LANE_W bits, and the routing of every requester to
// the bank its row is in.
//
// Each of the NREQ requesters (index 0 the highest priority) drives one request
// (mem_types#(DIM, ROWS, LANE_W)::req_t) addressing rows of the whole memory. A
// requester granted a read gets the row in rdata_o[i] the next cycle. Requesters that
// lose arbitration for a bank are not granted (conflict_o is set that cycle) and retry.
// With ACCUM (the accumulator) a write with accum adds to the lanes it writes.
module local_mem import systolic_pkg::*; #(
  parameter int DIM    = 4,
  parameter int ROWS   = 256,
  parameter int BANKS  = 2,
  parameter int LANE_W = 8,
  parameter bit ACCUM  = 1'b0,
  parameter int NREQ   = 2
) (
  input  logic                                          clk_i,
  input  mem_types#(DIM, ROWS, LANE_W)::req_t [NREQ-1:0] req_i,
  output logic [NREQ-1:0]                               gnt_o,
  output logic [NREQ-1:0][DIM*LANE_W-1:0]               rdata_o,
  output logic                                          conflict_o
);
  localparam int BANK_ROWS = ROWS / BANKS;
  localparam int BROW_W    = (BANK_ROWS > 1) ? $clog2(BANK_ROWS) : 1;
  localparam int BANK_W    = (BANKS > 1) ? $clog2(BANKS) : 1;

  // the banks split the rows evenly (a row's bank is row / BANK_ROWS)
  if (BANKS < 1 || ROWS % BANKS != 0) begin : g_param_check
    $error("local_mem: %0d rows do not split evenly into %0d banks", ROWS, BANKS);
  end

  // the requests' fields as the banks take them, and each request's bank and row in it
  logic [NREQ-1:0]                  req, we, accum;
  logic [NREQ-1:0][DIM*LANE_W-1:0]  wdata;
  logic [NREQ-1:0][DIM-1:0]         wmask;
  logic [NREQ-1:0][BANK_W-1:0]      bank, rbank_q;
  logic [NREQ-1:0][BROW_W-1:0]      brow;
  // per bank
  logic [BANKS-1:0][NREQ-1:0]       b_req, b_gnt;
  logic [BANKS-1:0][DIM*LANE_W-1:0] b_rdata;

  always_comb begin
    for (int i = 0; i < NREQ; i++) begin
      req[i]   = req_i[i].req;
      we[i]    = req_i[i].we;
      accum[i] = req_i[i].accum;
      wdata[i] = req_i[i].wdata;
      wmask[i] = req_i[i].wmask;
      bank[i]  = BANK_W'(32'(req_i[i].row) / BANK_ROWS);
      brow[i]  = BROW_W'(32'(req_i[i].row) % BANK_ROWS);
    end
    for (int b = 0; b < BANKS; b++) begin
      for (int i = 0; i < NREQ; i++) b_req[b][i] = req[i] && (bank[i] == BANK_W'(b));
    end
    for (int i = 0; i < NREQ; i++) gnt_o[i] = b_gnt[bank[i]][i];
    for (int i = 0; i < NREQ; i++) rdata_o[i] = b_rdata[rbank_q[i]];
    conflict_o = (req & ~gnt_o) != '0;
  end

  always_ff @(posedge clk_i) begin
    for (int i = 0; i < NREQ; i++) begin
      if (req[i] && gnt_o[i] && !we[i]) rbank_q[i] <= bank[i];
    end
  end

  for (genvar b = 0; b < BANKS; b++) begin : g_bank
    ram_bank #(.ROWS(BANK_ROWS), .DIM(DIM), .LANE_W(LANE_W), .ACCUM(ACCUM), .NREQ(NREQ)) u_bank (
      .clk_i,
      .req_i   (b_req[b]),
      .we_i    (we),
      .acc_i   (accum),
      .addr_i  (brow),
      .wdata_i (wdata),
      .wmask_i (wmask),
      .gnt_o   (b_gnt[b]),
      .rdata_o (b_rdata[b])
    );
  end
endmodule
