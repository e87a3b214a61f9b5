// The host/shader ABI of the Vulkan engine, written once: every kernel's push-constant arguments,
// the specialization constants, the workgroup shapes and the limits the kernels are written for.
// The GLSL kernels (#include "kernel_abi.h") and the C++ launchers (runtime/vulkan/kernels.h)
// both include this file, so a field added here reaches both sides or fails to compile.
//
// Rules that keep one text valid in both languages and one layout on both sides:
// - only 32-bit scalars (uint, float) and buffer addresses (ABI_ADDRESS: uvec2 in GLSL (VULKAN defined), read
//   through GL_EXT_buffer_reference_uvec2; uint64_t in C++; 8-byte aligned in both);
// - addresses first, scalars after, so std430 (push constants) and C++ lay fields out alike;
// - every struct fits the 128 bytes of push constants Vulkan guarantees (static_assert below).
#ifndef GPTOSS_KERNEL_ABI_H
#define GPTOSS_KERNEL_ABI_H

#ifdef VULKAN  // glslang targeting Vulkan (-V): GLSL
#define ABI_ADDRESS uvec2
#define ABI_CONST(type, name, value) const type name = value
#else
#include <cstdint>
namespace gptoss::vk::abi {
using uint = uint32_t;
#define ABI_ADDRESS uint64_t
#define ABI_CONST(type, name, value) inline constexpr type name = value
#endif

// ---- specialization constants (layout(constant_id = N)) ----
#define SPEC_SUBGROUP_SIZE 0  // the device's subgroup size (every kernel)
#define SPEC_ENCODING 1       // encoding of the dense matrix a kernel reads (ENC_*)
#define SPEC_COOP_PRECISION 2 // cooperative-matrix GEMMs: COOP_FAST, COOP_SPLIT, COOP_PROMOTED or COOP_PRECISE (coop_tile.glsl)
#define SPEC_COOP_M 3         // cooperative-matrix shape the device lists (fp16 x fp16 + fp32)
#define SPEC_COOP_N 4
#define SPEC_COOP_K 5
#define SPEC_EXPERT_OUTPUTS 6 // decode expert kernels: outputs per subgroup (mlp1: gate/up row pairs)
#define SPEC_EXPERT_BATCH 7   // decode expert kernels: blocks per lane loaded before any is used
#define SPEC_ATTENTION_GROUP 8      // decode attention: query heads per workgroup
#define SPEC_ATTENTION_HEAD_DIM 9   // decode attention: head_dim
#define SPEC_MATVEC_ROWS 10   // decode matvec: rows per subgroup
#define SPEC_MATVEC_BATCH 11  // decode matvec: 8-value loads per lane and row in flight before any is used
#define SPEC_ATTENTION_KEY_LANES 12  // decode attention: lanes per key in the score loop (1 or 2)
#define SPEC_COOP_ACC_MAP 13  // cooperative GEMMs: where each accumulator element lies (COOP_ACC_*; 0: not known)
#define SPEC_COOP_B_MAP 14    // the direct expert GEMM: where each element of a B operand lies (COOP_ACC_*'s form; 0: not known)
#define SPEC_COOP_PROMOTE 15  // the dense cooperative GEMMs: the most depth between promotions (VulkanTuning::dense_promote; 0: the tile's own)

// Dense encodings as the kernels read them: the plain floats as stored, and ggml's block
// quantizations (GGML_BLOCK_ENCODINGS below, ENC_Q8_0 and the ids after it).
ABI_CONST(uint, ENC_F32, 0u);
ABI_CONST(uint, ENC_F16, 1u);
ABI_CONST(uint, ENC_BF16, 2u);

// ggml's block quantizations on the device: the one table the host (runtime/vulkan/
// device_tensors.cpp) and the decoders (shaders/ggml_blocks.glsl) derive their layouts from. Each
// block of BLOCK values (as ggml stores it: formats/codecs/ggml_quants.h) is split at upload into
// two arrays over the matrix's blocks, keeping every byte once and decoding none:
//   quants: per block its bytes [Q, Q + QN): the bits of the values, a multiple of 16 bytes, so
//           a lane loads a chunk's bits as aligned 8- or 16-byte words;
//   meta:   per block its bytes [M0, M0 + M0N) then [M1, M1 + M1N): scales, d, dmin (an even
//           size; f16 fields fall within one 32-bit word).
// Types that look their values up (IQ4's 16 levels, the IQ grids: formats/codecs/iq_grids.h) have
// the GRID bytes of the table at the start of the weight buffer, the quants after it. Matrix rows
// are whole blocks, so element index i lies in block i / BLOCK at value i % BLOCK.
//   X(type, ENC id, BLOCK, Q, QN, M0, M0N, M1, M1N, GRID)
#define GGML_BLOCK_ENCODINGS(X)                        \
  X(Q8_0, 3, 32, 2, 32, 0, 2, 0, 0, 0)                 \
  X(Q4_0, 4, 32, 2, 16, 0, 2, 0, 0, 0)                 \
  X(Q4_1, 5, 32, 4, 16, 0, 4, 0, 0, 0)                 \
  X(Q5_0, 6, 32, 6, 16, 0, 6, 0, 0, 0)                 \
  X(Q5_1, 7, 32, 8, 16, 0, 8, 0, 0, 0)                 \
  X(IQ4_NL, 8, 32, 2, 16, 0, 2, 0, 0, 16)              \
  X(Q2_K, 9, 256, 16, 64, 0, 16, 80, 4, 0)             \
  X(Q3_K, 10, 256, 0, 96, 96, 14, 0, 0, 0)             \
  X(Q4_K, 11, 256, 16, 128, 0, 16, 0, 0, 0)            \
  X(Q5_K, 12, 256, 16, 160, 0, 16, 0, 0, 0)            \
  X(Q6_K, 13, 256, 0, 192, 192, 18, 0, 0, 0)           \
  X(IQ4_XS, 14, 256, 8, 128, 0, 8, 0, 0, 16)           \
  X(IQ3_S, 15, 256, 2, 64, 0, 2, 66, 44, 2048)         \
  X(IQ3_XXS, 16, 256, 2, 96, 0, 2, 0, 0, 1024)         \
  X(IQ2_S, 17, 256, 2, 64, 0, 2, 66, 16, 8192)         \
  X(IQ2_XS, 18, 256, 2, 64, 0, 2, 66, 8, 4096)         \
  X(IQ2_XXS, 19, 256, 2, 64, 0, 2, 0, 0, 2048)         \
  X(IQ1_S, 20, 256, 2, 48, 0, 2, 0, 0, 16384)          \
  X(IQ1_M, 21, 256, 0, 48, 48, 8, 0, 0, 16384)
#define ABI_BLOCK_ENCODING_ID(T, ID, BLOCK, Q, QN, M0, M0N, M1, M1N, GRID) ABI_CONST(uint, ENC_##T, uint(ID));
GGML_BLOCK_ENCODINGS(ABI_BLOCK_ENCODING_ID)
#undef ABI_BLOCK_ENCODING_ID
// The expert kernels' encoding of the OpenAI MXFP4 pair (blocks and scales as stored). Experts in
// another type take that type's encoding above: one matrix [experts * rows, cols] laid out as a
// dense one, which the expert kernels read through load_raw8 / load8.
ABI_CONST(uint, ENC_MXFP4, 100u);

// ---- limits ----
ABI_CONST(uint, kMaxExpertsPerToken, 32u);  // router, expert kernels: per-token arrays
ABI_CONST(uint, kMaxExperts, 1024u);        // router: logits in shared memory
ABI_CONST(uint, kMaxExpertDepth, 4096u);    // decode expert kernels: the input vector in shared memory
ABI_CONST(uint, kMaxMatvecCols, 8192u);     // decode matvec: the input vector in shared memory
ABI_CONST(uint, kMaxRouterHidden, 4096u);   // router: x * norm in shared memory (in double: 32 KB), a chunk of 8 a lane
ABI_CONST(uint, kMaxHeadDim, 256u);         // attention: a query row in registers/shared memory
ABI_CONST(uint, kMaxHeadsPerKvHead, 16u);   // attention: the query heads of one KV head together
ABI_CONST(uint, kAttentionSplits, 128u);    // decode attention: most key ranges (workgroups) per KV head the kernel holds
ABI_CONST(uint, kDefaultAttentionSplits, 32u);  // ... and the most the launcher uses (VulkanTuning::attention_splits overrides)
ABI_CONST(uint, kDefaultAttentionHeads, 2u);    // decode attention: most query heads per workgroup beyond one range (VulkanTuning::attention_heads overrides)
ABI_CONST(uint, kMaxAttentionGroupValues, 2048u);  // attention: (heads / kv_heads) * head_dim
ABI_CONST(uint, kMaxPrefillHeadDim, 64u);   // prefill attention: a query row in registers

// ---- workgroup shapes ----
#define WORKGROUP_SIZE 128        // most kernels
#define REDUCE_WORKGROUP_SIZE 256 // row reductions (rmsnorm, router, argmax, combine)
#define GEMM_TILE_M 64            // tokens per GEMM tile
#define GEMM_TILE_N 64            // output rows (weight rows) per GEMM tile
#define GEMM_TILE_K 32            // depth per step: one Q8_0 / MXFP4 block
#define GEMM_WORKGROUP_SIZE 256   // portable GEMM: 4 x 4 outputs per invocation
#define COOP_WORKGROUP_SIZE 128   // dense cooperative-matrix GEMM (GEMM_TILE_M x GEMM_TILE_N): 4 subgroups of 32, 32 x 32 each
#define COOP_TILE_K 64            // cooperative-matrix GEMMs: depth per step (two 32-value blocks)
// The cooperative expert GEMM's tiles: GEMM_TILE_M rows (moe_route's tiles) x COOP_EXPERT_TILE_N
// weight rows (its grid's columns), 8 subgroups of 32, 32 x 32 each: an A tile in shared memory
// serves twice the weight rows of the 64-wide tile (mlp1 reads each A tile 45 times instead of 90).
#define COOP_EXPERT_TILE_N 128
#define COOP_EXPERT_WORKGROUP_SIZE 256
// Its wide form (VulkanTuning::expert_tile = 192, expert_gemm_coop_wide.comp): 12 subgroups over
// GEMM_TILE_M x COOP_EXPERT_WIDE_TILE_N, 46 KB of operands, the C tile written out half its rows at a time.
#define COOP_EXPERT_WIDE_TILE_N 192
#define COOP_EXPERT_WIDE_WORKGROUP_SIZE 384
// Its short form (VulkanTuning::expert_tile = 256, expert_gemm_coop_short.comp): tiles of
// COOP_EXPERT_SHORT_TILE_M rows (moe_route's tiles then end every 32 rows of an expert) x
// COOP_EXPERT_SHORT_TILE_N weight rows, 8 subgroups side by side, two MXFP4 blocks decoded per
// invocation a step; where the launcher takes it: Kernels::cooperative_expert_tile.
#define COOP_EXPERT_SHORT_TILE_M 32
#define COOP_EXPERT_SHORT_TILE_N 256
#define COOP_EXPERT_SHORT_WORKGROUP_SIZE 256
// Its direct form, the default where the device's B operand layout is known (expert_tile = 0,
// Kernels::expert_direct; expert_gemm_coop_direct.comp): tiles of COOP_EXPERT_DIRECT_TILE_M rows x
// COOP_EXPERT_DIRECT_TILE_N weight rows, 8 subgroups of 32 x COOP_EXPERT_DIRECT_SUB_N, each lane
// decoding its operands' W elements straight into them, so that no W tile passes through shared
// memory and A takes COOP_EXPERT_DIRECT_STAGES stages; at about 120 registers two workgroups share a
// multiprocessor, each with its own barriers.
#define COOP_EXPERT_DIRECT_TILE_M 32
#define COOP_EXPERT_DIRECT_TILE_N 128
#define COOP_EXPERT_DIRECT_SUB_N 16
#define COOP_EXPERT_DIRECT_WORKGROUP_SIZE 256
#define COOP_EXPERT_DIRECT_STAGES 2
// The dense cooperative GEMM's wide tile (VulkanTuning::dense_tile = 128; F16 and BF16 weights):
// GEMM_TILE_M x COOP_DENSE_WIDE_TILE_N, 8 subgroups, one W part (Q8_0's two need 55 KB at this width).
#define COOP_DENSE_WIDE_TILE_N 128
#define COOP_DENSE_WIDE_WORKGROUP_SIZE 256
#define COOP_DENSE_WIDE_W_PARTS 1
// Operand stages of the cooperative tiles: 2 overlaps a step's stores with the last step's
// products (one barrier per step), but [A hi | A lo | W] twice is 55 KB (dense) or 74 KB (expert)
// and NVIDIA's Vulkan driver allows 48 KiB per workgroup, so both take one stage (two barriers).
#define COOP_DENSE_STAGES 1
#define COOP_EXPERT_STAGES 1
// Bytes of shared memory a cooperative tile uses (the launcher checks them against the device's
// maxComputeSharedMemorySize): per stage, 2 A parts + W_PARTS parts of W rows, COOP_TILE_K halves
// and a skew quad per row.
#define COOP_SHARED_BYTES(M, N, W_PARTS, STAGES) ((STAGES) * (2 * (M) + (W_PARTS) * (N)) * (COOP_TILE_K / 8 + 1) * 16)
// The dense tiles' Q8_0 block scales (COOP_SCALED_W), after the stages: per stage an f32 d for
// each of the COOP_TILE_K / 32 blocks of each W row.
#define COOP_W_SCALE_BYTES(N, STAGES) ((STAGES) * (N) * (COOP_TILE_K / 32) * 4)
// The f32 C tile a cooperative tile writes its sums through: ROWS rows of N floats and a skew quad.
#define COOP_C_TILE_BYTES(ROWS, N) ((ROWS) * ((N) / 4 + 1) * 16)
// W parts of the tiles: the dense one holds Q8_0's d * q as f16 hi + lo from COOP_PROMOTED; MXFP4's
// values (the expert tile's) are exact in f16.
#define COOP_DENSE_W_PARTS 2
#define COOP_EXPERT_W_PARTS 1
// The cooperative GEMMs' precision (SPEC_COOP_PRECISION, VulkanTuning::gemm_precision).
ABI_CONST(uint, COOP_FAST, 0u);
ABI_CONST(uint, COOP_SPLIT, 1u);
ABI_CONST(uint, COOP_PROMOTED, 2u);
ABI_CONST(uint, COOP_PRECISE, 3u);
// COOP_PROMOTED's and COOP_PRECISE's lo parts (A's and a split W's) are stored times this, so that
// they stay in f16's normal range where hi does, and their products are scaled back as they join the sums.
ABI_CONST(float, COOP_LO_SCALE, 2048.0f);
// The element layout of a 16 x 16 f32 cooperative matrix, which the dense GEMMs of Q8_0 weights
// read element by element to scale each column by its block's d (COOP_SCALED_W): NVIDIA's tensor
// cores hold an accumulator as two 16 x 8 halves, lane l rows l / 4 and l / 4 + 8 and columns
// 2 (l % 4) and the next of each half. Which of a lane's COOP_ACC_ELEMENTS elements is which is the
// map (SPEC_COOP_ACC_MAP): 3 bits per element e at bit 3e, bits 0 and 1 the column 2 (l % 4) +
// (bit 0) + 8 (bit 1), bit 2 the slot (row l / 4 + 8 slot). Cooperative matrices do not promise a
// layout: Kernels::accumulator_layout() loads a matrix of indices on the device (coop_layout.comp)
// and reads the map from it; on a device whose elements lie otherwise the map is 0 (no valid map
// is: it would put every element in one place) and Q8_0 weights take two f16 parts instead.
// A 16 x 16 f16 B operand (K x N: W rows are its columns) is NVIDIA's two 16 x 8 halves too, lane l
// W rows l / 4 and l / 4 + 8 and depths 2 (l % 4) and the next of each half: the same map's form
// with the W row as the row and the depth as the column (SPEC_COOP_B_MAP, Kernels::operand_layout()).
#define COOP_ACC_ELEMENTS 8
#define COOP_LAYOUT_B_PROBE (32 * COOP_ACC_ELEMENTS + 1)
#define COOP_ACC_SLOT(MAP, E) (((MAP) >> (3u * (E) + 2u)) & 1u)
#define COOP_ACC_SLOT_ROW(L, SLOT) ((L) / 4u + 8u * (SLOT))
#define COOP_ACC_ROW(MAP, L, E) COOP_ACC_SLOT_ROW(L, COOP_ACC_SLOT(MAP, E))
#define COOP_ACC_COL(MAP, L, E) (2u * ((L) % 4u) + (((MAP) >> (3u * (E))) & 1u) + 8u * (((MAP) >> (3u * (E) + 1u)) & 1u))
// Decode matvec (SPEC_MATVEC_ROWS / SPEC_MATVEC_BATCH; VulkanTuning::matvec_rows/matvec_loads
// override them to compare): rows per subgroup and loads per lane in flight per row.
#define MATVEC_WORKGROUP_SIZE 256  // its subgroups share one staged x
#define MATVEC_DEFAULT_ROWS 2
#define MATVEC_DEFAULT_BATCH 4
#define MATVEC_WAVE_ROWS 4         // the most rows per subgroup the one-wave rule takes (Kernels::matvec_shape_for)
#define MATVEC_GROUPS_PER_SM 2     // workgroups of the matvec one multiprocessor holds at once (119 registers on the H100)
// Rows x loads per lane that keep the one-wave shapes within MATVEC_GROUPS_PER_SM workgroups per
// multiprocessor: BF16 with 3 rows and 4 loads took 138 registers on the H100 (one workgroup per
// multiprocessor: qkv's 214 workgroups in two waves), with 3 loads 126 (a260c29). matvec_int_dot
// takes 66-94 at 4 loads and keeps them: with 3 the Q8_0 GGUF measured slower.
#define MATVEC_WAVE_LOADS 9
#define MATVEC_INT_DOT_WAVE_LOADS (MATVEC_WAVE_ROWS * MATVEC_DEFAULT_BATCH)
// Matrices that take many waves at any shape (the unembedding) stream: no residency to keep, so
// the shape that moves the most bytes per instruction. matvec_int_dot's 8 rows x 8 loads ran the
// Q8_0 unembedding (201088 x 2880) in 266 us against 291 at the float shape's 4 x 4 on an H100
// (vulkan_kernel_bench; 8 x 16 spills). The float decodings keep 4 x 4: BF16's best, 2 x 16, was 2% faster alone.
#define MATVEC_STREAM_ROWS MATVEC_WAVE_ROWS
#define MATVEC_STREAM_BATCH MATVEC_DEFAULT_BATCH
#define MATVEC_INT_DOT_STREAM_ROWS 8
#define MATVEC_INT_DOT_STREAM_BATCH 8
// Workgroups of decode attention (DECODE_ATTENTION_SIZE invocations) one multiprocessor holds at
// once (Kernels::decode_attention_resident; at most 128 registers for two: two workgroups' 65536),
// by the KV cache's encoding and the lanes per key, as the H100's driver compiles them: one lane
// per key 152 registers with an f32 cache, 125 with f16; two lanes per key 128 and 97 (8f1ad56).
// Kernels::attention_wave_splits fills the device with them.
#define DECODE_ATTENTION_GROUPS_PER_SM 1         // f32 cache, one lane per key
#define DECODE_ATTENTION_F16_GROUPS_PER_SM 2     // f16 cache, one lane per key
#define DECODE_ATTENTION_PAIRED_GROUPS_PER_SM 2  // two lanes per key, either cache
#define MATVEC_MAX_ROWS 8          // the most either the launcher accepts
#define MATVEC_MAX_BATCH 16
// Decode expert kernels (SPEC_EXPERT_OUTPUTS / SPEC_EXPERT_BATCH, per kernel; VulkanTuning's
// mlp1_*/mlp2_* override them to compare): outputs per subgroup and blocks per lane loaded before any is used
// (3 x 32 lanes covers a 2880-wide row of gpt-oss in one batch).
#define EXPERT_WORKGROUP_SIZE 256
#define EXPERT_MLP1_OUTPUTS 2
#define EXPERT_MLP1_BATCH 1
#define EXPERT_MLP2_OUTPUTS 4
#define EXPERT_MLP2_BATCH 1
#define EXPERT_MAX_OUTPUTS 16     // the largest outputs per subgroup the launchers accept
#define EXPERT_MAX_BATCH 8
#define ATTENTION_ROWS 64         // prefill attention: (head, query) rows per workgroup
#define DECODE_ATTENTION_SIZE 256 // decode attention: invocations per workgroup, and by default the fewest keys a range has
#define ROUTER_WORKGROUP_SIZE 1024  // router: one subgroup per expert at once
#define ROUTER_DECODE_WORKGROUP_SIZE 256  // router of one token: one workgroup per expert
#define ARGMAX_GROUPS 128         // argmax: slices reduced at once
#define ATTENTION_KEY_BLOCK 32    // prefill attention: keys per step
// Prefill attention on cooperative matrices (attention_prefill_coop.comp, the same arguments and
// rows as attention_prefill, ATTENTION_COOP_ROWS of them a workgroup: twice the f32 kernel's, so
// each key block is loaded and split into its parts once per 16 queries of gpt-oss's group of 8
// query heads): 8 subgroups of 32, ATTENTION_COOP_SUBGROUP_ROWS (head, query) rows each, head dims
// padded to ATTENTION_COOP_DIMS. Shared memory in 16-byte words, each row of halves or floats
// skewed by one word: the workgroup's K tile as three parts of halves and V's as two (the f32
// output after the last block lies over all of shared memory, and Q's parts before the first, half
// the rows at a time), and per subgroup its scores (f32) with P as hi and lo halves laid over them
// (P is written once the scores are read), then one rescale float per row.
#define ATTENTION_COOP_SIZE 256
#define ATTENTION_COOP_SUBGROUP_ROWS 16
#define ATTENTION_COOP_ROWS (ATTENTION_COOP_SIZE / 32 * ATTENTION_COOP_SUBGROUP_ROWS)
#define ATTENTION_COOP_DIMS 64
#define ATTENTION_COOP_TILE_QUADS (5 * ATTENTION_KEY_BLOCK * (ATTENTION_COOP_DIMS / 8 + 1))
#define ATTENTION_COOP_S_QUADS (ATTENTION_COOP_SUBGROUP_ROWS * (ATTENTION_KEY_BLOCK / 4 + 1))
#define ATTENTION_COOP_P_QUADS (2 * ATTENTION_COOP_SUBGROUP_ROWS * (ATTENTION_KEY_BLOCK / 8 + 1))
#define ATTENTION_COOP_SUBGROUP_QUADS \
  ((ATTENTION_COOP_S_QUADS > ATTENTION_COOP_P_QUADS ? ATTENTION_COOP_S_QUADS : ATTENTION_COOP_P_QUADS) + \
   ATTENTION_COOP_SUBGROUP_ROWS / 4)
#define ATTENTION_COOP_SHARED_BYTES \
  (16 * (ATTENTION_COOP_TILE_QUADS + ATTENTION_COOP_SIZE / 32 * ATTENTION_COOP_SUBGROUP_QUADS))
// P (probabilities, at most 1) is split into f16 halves times this, so that probabilities down to
// 2^-29 of the row's largest stay out of f16's subnormals; the products are scaled back.
ABI_CONST(float, ATTENTION_P_SCALE, 32768.0f);

// The KV caches' layout, [kv_heads, slots, head_dim]: one KV head's keys (and values) follow each
// other, so decode attention reads a range of them as one stretch of memory. The float index of
// (slot, KV head g, dim 0).
#define KV_CACHE_ROW(SLOT, G, SLOTS, HEAD_DIM) (((G) * (SLOTS) + (SLOT)) * (HEAD_DIM))

// ---- flags ----
ABI_CONST(uint, MATVEC_ACCUMULATE, 1u);  // y += W x (+ b) instead of y = W x (+ b)
ABI_CONST(uint, MATVEC_BIAS, 2u);
ABI_CONST(uint, MATVEC_NORM, 4u);        // x is RMS-normalized (times `norm`) first
ABI_CONST(uint, GEMM_ACCUMULATE, 1u);
ABI_CONST(uint, GEMM_BIAS, 2u);
ABI_CONST(uint, EXPERT_SWIGLU, 1u);      // expert GEMM of mlp1: gate/up rows interleaved, SwiGLU out
ABI_CONST(uint, EXPERT_GATHER, 2u);      // expert GEMM reads A rows through the token list

// ---- arguments ----

// x[t] = row tokens[t] of the table, decoded; t < count.
struct EmbedArgs {
  ABI_ADDRESS table;
  ABI_ADDRESS table_scales;
  ABI_ADDRESS tokens;
  ABI_ADDRESS x;
  uint hidden;
  uint count;
};

// y[r] = x[first_row + r] * rsqrt(mean(x^2) + eps) * weight, r < rows.
struct RmsNormArgs {
  ABI_ADDRESS x;
  ABI_ADDRESS weight;
  ABI_ADDRESS y;
  uint dim;
  uint rows;
  uint first_row;
  float eps;
};

// y[r] (+)= W[r] . x' (+ bias[r]) for one vector, x' = x or its RMSNorm (MATVEC_NORM).
struct MatvecArgs {
  ABI_ADDRESS weight;
  ABI_ADDRESS scales;
  ABI_ADDRESS bias;
  ABI_ADDRESS x;
  ABI_ADDRESS norm;
  ABI_ADDRESS y;
  uint rows;
  uint cols;
  uint flags;
  float eps;
};

// Decode attention of the token at step.position: RoPE of its Q and K (half-split pairs, YaRN
// tables), K and V into the cache slot position % slots, then for each KV head and each of up to
// `splits` key ranges a partial softmax (max, sum, weighted V) of the query heads of that KV head;
// the last range of a KV head to finish merges them with the sinks into target [heads * head_dim].
// The query heads per KV head and head_dim are specialization constants (SPEC_ATTENTION_*).
struct AttentionDecodeArgs {
  ABI_ADDRESS qkv;  // [heads + 2 kv_heads, head_dim] of the new token
  ABI_ADDRESS k_cache;
  ABI_ADDRESS v_cache;
  ABI_ADDRESS rope;  // [positions, head_dim / 2] of (cos, sin) pairs (runtime/rope.h)
  ABI_ADDRESS step;
  ABI_ADDRESS partials;  // [heads, splits, head_dim + 2]
  ABI_ADDRESS sinks;
  ABI_ADDRESS target;
  ABI_ADDRESS counters;  // [workgroup columns], zero between dispatches
  uint kv_heads;
  uint window;  // 0: every key
  uint slots;   // cache positions (a ring of `slots` on sliding layers)
  uint splits;  // workgroup rows: the most ranges the kernel cuts the keys into
  float scale;
  uint range_keys;  // the fewest keys a range has (DECODE_ATTENTION_SIZE, or VulkanTuning::attention_range)
  uint group;       // query heads per KV head (SPEC_ATTENTION_GROUP: per workgroup, a divisor of it)
  uint max_keys;    // the most keys at the step's position this dispatch is made for (beyond, it returns)
};

// RoPE of Q (in place) and K of `count` new tokens at step.position.., K and V into the cache.
struct RopeStoreArgs {
  ABI_ADDRESS qkv;  // [count, heads + 2 kv_heads, head_dim]
  ABI_ADDRESS k_cache;
  ABI_ADDRESS v_cache;
  ABI_ADDRESS rope;  // [positions, head_dim / 2] of (cos, sin) pairs (runtime/rope.h)
  ABI_ADDRESS step;
  uint heads;
  uint kv_heads;
  uint head_dim;
  uint slots;
  uint count;
};

// Causal attention of `count` queries (positions step.position..) over the cache, online softmax
// with the sink, sliding window; out [count, heads * head_dim].
struct AttentionPrefillArgs {
  ABI_ADDRESS qkv;
  ABI_ADDRESS k_cache;
  ABI_ADDRESS v_cache;
  ABI_ADDRESS sinks;
  ABI_ADDRESS step;
  ABI_ADDRESS target;
  uint heads;
  uint kv_heads;
  uint head_dim;
  uint window;
  uint slots;
  uint count;
  float scale;
};

// Per token t < count: x' = RMSNorm(x[t]) * norm (written to xn[t]), router logits
// W x' + bias, the k largest (ties to the lower expert) and their softmax. With several workgroups
// per token (decode), their logits meet in partials [count, experts].
struct RouterArgs {
  ABI_ADDRESS x;
  ABI_ADDRESS norm;
  ABI_ADDRESS weight;
  ABI_ADDRESS scales;
  ABI_ADDRESS bias;
  ABI_ADDRESS xn;
  ABI_ADDRESS chosen;        // [count, k] expert ids
  ABI_ADDRESS gate_weights;  // [count, k]
  ABI_ADDRESS logits;        // decode (count 1): the logits [experts], ranked by the expert kernels
  uint hidden;
  uint experts;
  uint k;
  uint count;
  float eps;
};

// Decode: act[s, j] = SwiGLU of rows 2j, 2j+1 of expert chosen[s]'s mlp1 times x (+ bias).
// Decode mlp1 ranks the router's logits [experts] in each workgroup (expert_ranking.glsl), its
// first workgroup writing the choices to chosen and gate_weights [k] for mlp2.
struct ExpertMlp1Args {
  ABI_ADDRESS blocks;
  ABI_ADDRESS scales;
  ABI_ADDRESS bias;
  ABI_ADDRESS x;
  ABI_ADDRESS chosen;
  ABI_ADDRESS gate_weights;
  ABI_ADDRESS logits;
  ABI_ADDRESS act;
  uint hidden;
  uint intermediate;
  uint k;
  uint experts;
  float limit;
};

// Decode: residual[d] += sum over the chosen experts in increasing id of w * (mlp2 . act + bias).
// Workgroup (x, slot) computes its outputs for one expert into partials [k, hidden]; the last
// slot to finish a group of outputs adds them up in expert order.
struct ExpertMlp2Args {
  ABI_ADDRESS blocks;
  ABI_ADDRESS scales;
  ABI_ADDRESS bias;
  ABI_ADDRESS act;
  ABI_ADDRESS chosen;
  ABI_ADDRESS gate_weights;
  ABI_ADDRESS residual;
  ABI_ADDRESS partials;
  ABI_ADDRESS counters;  // one per workgroup column, zero between dispatches
  uint hidden;
  uint intermediate;
  uint k;
};

// result[0] = the index of the largest of values[0..count) (ties to the lowest index), result[1]
// its bits. Each workgroup takes a slice; the last to finish picks among the slices' winners.
struct ArgmaxArgs {
  ABI_ADDRESS values;
  ABI_ADDRESS result;
  ABI_ADDRESS partials;  // 2 words per workgroup
  ABI_ADDRESS counters;
  uint count;
};

// hi[r] = each value of a[r] rounded to f16's 10 mantissa bits (to nearest, ties away from zero),
// lo[r] = the rest times lo_scale (COOP_LO_SCALE from COOP_PROMOTED, else 1) rounded to f16 (hi +
// lo: within an f32 ulp of the value), for r < rows: the cooperative-matrix GEMMs' inputs, made
// once per product instead of once per tile.
// hi and lo are [rows, cols] halves.
struct SplitHalvesArgs {
  ABI_ADDRESS a;
  ABI_ADDRESS hi;
  ABI_ADDRESS lo;
  uint rows;
  uint cols;
  uint a_stride;
  float lo_scale;
};

// coop_layout.comp, one subgroup of 32: the 16 x 16 f32 cooperative matrix whose element (r, c) is
// r * 16 + c, loaded from shared memory; target[lane * COOP_ACC_ELEMENTS + e] = the lane's element
// e, and target[32 * COOP_ACC_ELEMENTS] = the elements per lane (the matrix's length()). Then, from
// target[COOP_LAYOUT_B_PROBE], the same for the f16 B operand loaded as the GEMMs load W (element
// (k, n) = W row n's value k, index n * 16 + k).
struct CoopLayoutArgs {
  ABI_ADDRESS target;
};

// C[m, n] (+)= A[m] . W[n] (+ bias[n]) for m < rows, n < cols: A f32 [rows, depth] with rows
// `a_stride` floats apart (the cooperative kernel reads A as split halves [rows, depth] instead),
// W dense [cols, depth] in its encoding, C [rows, cols].
struct GemmArgs {
  ABI_ADDRESS a_hi;
  ABI_ADDRESS a_lo;
  ABI_ADDRESS a;
  ABI_ADDRESS weight;
  ABI_ADDRESS scales;
  ABI_ADDRESS bias;
  ABI_ADDRESS c;
  uint rows;
  uint cols;
  uint depth;
  uint a_stride;
  uint c_stride;
  uint flags;
};

// Groups the (token, slot) assignments of `count` tokens by expert: for expert e its rows
// [offsets[e], offsets[e] + counts[e]) of the grouped order; assign_token[row] = token,
// row_of[t * k + s] = row; tiles: (expert, first row, rows) of at most tile_rows rows (GEMM_TILE_M, or
// COOP_EXPERT_SHORT_TILE_M for the short expert tile); the
// indirect dispatch sizes (n_tiles_mlp1 / n_tiles_mlp2, tiles, 1) of the two expert GEMMs, the
// column tiles of the kernel each runs (GEMM_TILE_N or COOP_EXPERT_TILE_N weight rows wide).
struct MoeRouteArgs {
  ABI_ADDRESS chosen;
  ABI_ADDRESS assign_token;
  ABI_ADDRESS row_of;
  ABI_ADDRESS tiles;
  ABI_ADDRESS dispatch;  // 2 x (x, y, z)
  uint count;
  uint k;
  uint experts;
  uint n_tiles_mlp1;
  uint n_tiles_mlp2;
  uint tile_rows;
};

// One expert tile of the grouped MoE: out[row, n] for the tile's rows of one expert. mlp1
// (EXPERT_SWIGLU | EXPERT_GATHER): A rows are xn[assign_token[row]], out is act [rows,
// intermediate]; mlp2: A rows are act[row], out is y [rows, hidden] (bias added, not weighted).
struct ExpertGemmArgs {
  ABI_ADDRESS a_hi;  // the cooperative kernel's A as split halves (rows of a)
  ABI_ADDRESS a_lo;
  ABI_ADDRESS a;
  ABI_ADDRESS assign_token;
  ABI_ADDRESS blocks;
  ABI_ADDRESS scales;
  ABI_ADDRESS bias;
  ABI_ADDRESS tiles;
  ABI_ADDRESS target;
  uint depth;        // input width (hidden for mlp1, intermediate for mlp2)
  uint weight_rows;  // rows of one expert's matrix (2 * intermediate, or hidden)
  uint flags;
  float limit;
};

// x[t] += sum over t's experts in increasing id of gate weight * y[row_of[t, s]].
struct MoeCombineArgs {
  ABI_ADDRESS y;
  ABI_ADDRESS row_of;
  ABI_ADDRESS chosen;
  ABI_ADDRESS gate_weights;
  ABI_ADDRESS x;
  uint hidden;
  uint k;
  uint count;
};

// The step state the host writes before each submit (command buffers are recorded once).
struct StepState {
  uint position;  // of the first new token
  uint count;     // new tokens
  // Tokens per sequence where a prefill submit packs independent sequences one after the other
  // (Engine::forward_sequences): each sequence's keys and RoPE positions start at its first token
  // (rope_store, the prefill attention kernels); 0: one sequence.
  uint sequence;
};

#ifndef VULKAN
inline constexpr uint32_t kMaxPushBytes = 128;
static_assert(sizeof(EmbedArgs) <= kMaxPushBytes && sizeof(RmsNormArgs) <= kMaxPushBytes &&
              sizeof(MatvecArgs) <= kMaxPushBytes && sizeof(AttentionDecodeArgs) <= kMaxPushBytes &&
              sizeof(RopeStoreArgs) <= kMaxPushBytes &&
              sizeof(AttentionPrefillArgs) <= kMaxPushBytes && sizeof(RouterArgs) <= kMaxPushBytes &&
              sizeof(ExpertMlp1Args) <= kMaxPushBytes && sizeof(ExpertMlp2Args) <= kMaxPushBytes &&
              sizeof(ArgmaxArgs) <= kMaxPushBytes && sizeof(GemmArgs) <= kMaxPushBytes &&
              sizeof(MoeRouteArgs) <= kMaxPushBytes && sizeof(ExpertGemmArgs) <= kMaxPushBytes &&
              sizeof(SplitHalvesArgs) <= kMaxPushBytes && sizeof(CoopLayoutArgs) <= kMaxPushBytes &&
              sizeof(MoeCombineArgs) <= kMaxPushBytes,
              "push constants beyond the 128 bytes every Vulkan device offers");
static_assert(kMaxRouterHidden / 8 <= ROUTER_WORKGROUP_SIZE, "router.glsl: a chunk of 8 values per invocation at most");
}  // namespace gptoss::vk::abi
#endif

#endif  // GPTOSS_KERNEL_ABI_H
