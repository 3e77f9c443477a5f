/* all.cu — the one translation unit nvcc turns into the plugin's fatbin: every kernel, by inclusion,
 * so that one `nvcc --fatbin` makes one image (SASS for sm_80 and sm_90, PTX for compute_90). */
#include "kv_write.cu"
#include "attn_simt.cu"
#include "attn_mma.cu"
#include "attn_prefill.cu"
#include "merge.cu"
#include "mla.cu"
#include "mla_mma.cu"
#include "linear.cu"
