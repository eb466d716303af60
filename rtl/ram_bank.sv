// One single-ported memory bank: ROWS rows of DIM lanes of LANE_W bits.
//
// Scratchpad banks are int8 lanes; accumulator banks are int32 lanes with
// ACCUM set, where a write with acc_i adds (wrapping) to the lanes wmask selects
// instead of overwriting. NREQ requesters, fixed priority (index 0 highest). One
// access a cycle: the granted requester reads (data in rdata_o the next cycle) or
// writes; the others are not granted and must hold their request.
module ram_bank #(
  parameter int ROWS   = 64,
  parameter int DIM    = 4,
  parameter int LANE_W = 8,
  parameter bit ACCUM  = 1'b0,
  parameter int NREQ   = 2,
  localparam int AW    = (ROWS > 1) ? $clog2(ROWS) : 1,
  localparam int SEL_W = (NREQ > 1) ? $clog2(NREQ) : 1   // index of a requester
) (
  input  logic                            clk_i,
  input  logic [NREQ-1:0]                 req_i,
  input  logic [NREQ-1:0]                 we_i,
  input  logic [NREQ-1:0]                 acc_i,
  input  logic [NREQ-1:0][AW-1:0]         addr_i,
  input  logic [NREQ-1:0][DIM*LANE_W-1:0] wdata_i,
  input  logic [NREQ-1:0][DIM-1:0]        wmask_i,
  output logic [NREQ-1:0]                 gnt_o,
  output logic [DIM*LANE_W-1:0]           rdata_o
);
  logic [DIM*LANE_W-1:0] mem_q [ROWS];
  logic [DIM*LANE_W-1:0] rdata_q;
  logic                  sel_valid;
  logic [SEL_W-1:0]      sel;

  if (ROWS < 1 || DIM < 1 || LANE_W < 1 || NREQ < 1) begin : g_param_check
    $error("ram_bank: ROWS (%0d), DIM (%0d), LANE_W (%0d) and NREQ (%0d) must be positive",
           ROWS, DIM, LANE_W, NREQ);
  end

  always_comb begin
    sel_valid = 1'b0;
    sel       = '0;
    gnt_o     = '0;
    for (int i = NREQ - 1; i >= 0; i--) begin
      if (req_i[i]) begin
        sel_valid = 1'b1;
        sel       = SEL_W'(i);
      end
    end
    if (sel_valid) gnt_o[sel] = 1'b1;
  end

  // A write's row: the lanes wmask selects take wdata (plus the old lane with acc_i in an
  // accumulator bank), the others keep their value. Formed at the clock edge of a write only.
  function automatic logic [DIM*LANE_W-1:0] written(input logic [DIM*LANE_W-1:0] old,
                                                     input logic [DIM*LANE_W-1:0] wdata,
                                                     input logic [DIM-1:0] wmask, input logic acc);
    logic [DIM*LANE_W-1:0] r;
    r = old;
    for (int l = 0; l < DIM; l++) begin
      if (wmask[l]) begin
        r[l*LANE_W +: LANE_W] = wdata[l*LANE_W +: LANE_W]
            + ((ACCUM && acc) ? old[l*LANE_W +: LANE_W] : LANE_W'(0));
      end
    end
    return r;
  endfunction

  // the storage loads only the row written (a RAM, not a register file)
  always_ff @(posedge clk_i) begin
    if (sel_valid) begin
      if (we_i[sel]) begin
        mem_q[addr_i[sel]] <= written(mem_q[addr_i[sel]], wdata_i[sel], wmask_i[sel], acc_i[sel]);
      end else begin
        rdata_q <= mem_q[addr_i[sel]];
      end
    end
  end

  assign rdata_o = rdata_q;
endmodule
