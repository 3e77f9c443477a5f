/* fatbin_attention.cu — the attention family's translation unit: nvcc turns it into one fatbin (the
 * plugin's attention module: KV writes, SIMT / general tensor-core attention, prefill, merge; the
 * tensor-core decode kernels are the decode family, attn_decode.cu). */
#include "kv_write.cu"
#include "attn_simt.cu"
#include "attn_mma.cu"
#include "attn_prefill.cu"
#include "merge.cu"
