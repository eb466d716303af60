// One single-ported scratchpad bank: ROWS rows of DIM int8 values.
//
// NREQ requesters, fixed priority (index 0 highest). One access a cycle: the
// granted requester reads (data in rdata_o the next cycle) or writes the bytes
// its wmask selects; the others are not granted and must hold their request.
module sp_bank #(
  parameter int ROWS = 64,
  parameter int DIM  = 4,
  parameter int NREQ = 2,
  localparam int AW  = (ROWS > 1) ? $clog2(ROWS) : 1
) (
  input  logic                      clk_i,
  input  logic [NREQ-1:0]           req_i,
  input  logic [NREQ-1:0]           we_i,
  input  logic [NREQ-1:0][AW-1:0]   addr_i,
  input  logic [NREQ-1:0][DIM*8-1:0] wdata_i,
  input  logic [NREQ-1:0][DIM-1:0]  wmask_i,
  output logic [NREQ-1:0]           gnt_o,
  output logic [DIM*8-1:0]          rdata_o
);
  logic [DIM*8-1:0] mem_q [ROWS];
  logic [DIM*8-1:0] rdata_q;
  logic             sel_valid;
  logic [$clog2(NREQ+1)-1:0] sel;

  always_comb begin
    sel_valid = 1'b0;
    sel       = '0;
    gnt_o     = '0;
    for (int i = NREQ - 1; i >= 0; i--) begin
      if (req_i[i]) begin
        sel_valid = 1'b1;
        sel       = ($clog2(NREQ+1))'(i);
      end
    end
    if (sel_valid) gnt_o[sel] = 1'b1;
  end

  always_ff @(posedge clk_i) begin
    if (sel_valid) begin
      if (we_i[sel]) begin
        for (int b = 0; b < DIM; b++) begin
          if (wmask_i[sel][b]) mem_q[addr_i[sel]][b*8 +: 8] <= wdata_i[sel][b*8 +: 8];
        end
      end else begin
        rdata_q <= mem_q[addr_i[sel]];
      end
    end
  end

  assign rdata_o = rdata_q;
endmodule
