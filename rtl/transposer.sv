// The transposer: two DIM x DIM int8 blocks, written a row at a time and read a column
// at a time. One operand goes through it (Gemmini's single transposer): the execute
// unit's W stage writes the next block while its S stage reads the columns of the other.
module transposer #(
  parameter int DIM = 4,
  localparam int IW = (DIM > 1) ? $clog2(DIM) : 1
) (
  input  logic           clk_i,
  // write row wr_row_i of block wr_blk_i
  input  logic           wr_en_i,
  input  logic           wr_blk_i,
  input  logic [IW-1:0]  wr_row_i,
  input  logic [DIM*8-1:0] wr_data_i,
  // column rd_col_i of block rd_blk_i: element k is row k's (zeros without rd_en_i: a
  // simulation then skips the DIM dynamic selects)
  input  logic           rd_en_i,
  input  logic           rd_blk_i,
  input  logic [IW-1:0]  rd_col_i,
  output logic [DIM*8-1:0] rd_data_o
);
  logic [DIM*8-1:0] blk_q [2][DIM];

  always_ff @(posedge clk_i) begin
    if (wr_en_i) blk_q[wr_blk_i][wr_row_i] <= wr_data_i;
  end

  always_comb begin
    rd_data_o = '0;
    if (rd_en_i) begin
      for (int k = 0; k < DIM; k++) begin
        rd_data_o[k*8 +: 8] = blk_q[rd_blk_i][k][32'(rd_col_i)*8 +: 8];
      end
    end
  end
endmodule
