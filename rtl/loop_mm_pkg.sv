// Types of LoopMatmul, the LOOP_WS unroller (loop_matmul.sv and its sequencers loop_mm_*.sv).
//
// Bounds, pads and iterators count DIM x DIM blocks, 16 bits wide as in the loop words.
// Local addresses are 32-bit operand addresses (flags in [31:29], the row in [28:0]).
package loop_mm_pkg;
  import systolic_pkg::*;

  // Like systolic_pkg, a library: a unit alone uses only some of it.
  /* verilator lint_off UNUSEDPARAM */
  localparam int ITER_W = 16;
  localparam int NSEQ   = 5;   // the sequencers, in the order of seq_e
  /* verilator lint_on UNUSEDPARAM */
  typedef logic [ITER_W-1:0] iter_t;
  typedef enum logic [2:0] {SeqLdA = 3'd0, SeqLdB = 3'd1, SeqLdD = 3'd2, SeqEx = 3'd3,
                            SeqSt = 3'd4} seq_e;

  // What a transfer sequencer walks: a tile of max_row x max_col blocks, one mvin (or mvout)
  // per block row of up to max_blocks blocks. The inner iterator walks rows (step 1) when
  // inner_row, else columns (step max_blocks); the outer one walks the other dimension.
  // A zero dram_addr skips the tile (the sequencer takes it and issues nothing).
  typedef struct packed {
    iter_t             max_row;
    iter_t             max_col;
    iter_t             pad_row;      // rows missing from the last block row
    iter_t             pad_col;      // columns missing from the last block column
    iter_t             max_blocks;   // blocks per transfer: min(max_col, the unit's limit)
    logic              inner_row;
    logic [WORD_W-1:0] dram_addr;
    logic [WORD_W-1:0] dram_stride;  // elements between DRAM rows
    logic              elem32;       // 4-byte DRAM elements (else 1-byte)
    logic [31:0]       local_base;   // local address of block (0, 0), with its flags
    funct_e            funct;
    logic              loop_id;
  } xfer_req_t;

  // What the store sequencer walks: C's tile (rows i inner, block columns j outer), and what
  // it waits for: the last k of the execute sequencer's walk (or, resadd, B's loader). A loop
  // whose act is LAYERNORM (2) or SOFTMAX (4) stores its rows through the normalization unit
  // (loop_mm_st_norm.sv); the other acts are the store unit's config_st's.
  typedef struct packed {
    xfer_req_t  xfer;
    iter_t      max_k;
    logic       resadd;
    logic [2:0] act;
  } st_req_t;

  // What the execute sequencer walks: preload + compute per (k, j, i), i innermost.
  typedef struct packed {
    iter_t       max_i;
    iter_t       max_j;
    iter_t       max_k;
    iter_t       pad_i;
    iter_t       pad_j;
    iter_t       pad_k;
    logic        a_transpose;
    logic        b_transpose;
    logic        accumulate;   // the first k adds to C too (a bias was loaded there)
    logic        skip;         // resadd: nothing to compute
    logic [28:0] a_row;        // scratchpad row of A's block (0, 0)
    logic [28:0] b_row;        // scratchpad row of B's block (0, 0)
    logic [28:0] c_row;        // accumulator row of C's block (0, 0)
    logic        loop_id;
  } ex_req_t;

  // u + n, wrapping to 0 at max (Gemmini's floorAdd); u when !en.
  function automatic iter_t floor_add(input iter_t u, input iter_t n, input iter_t max,
                                      input logic en);
    logic [ITER_W:0] sum;
    sum = {1'b0, u} + {1'b0, n};
    if (!en) return u;
    return (sum >= {1'b0, max}) ? '0 : sum[ITER_W-1:0];
  endfunction

  // the size of a block along one dimension: DIM, less the pad in the last block
  function automatic logic [15:0] block_size(input logic [15:0] dim, input iter_t it,
                                             input iter_t max, input iter_t pad);
    return dim - ((it == max - 1'b1) ? pad : '0);
  endfunction

endpackage
