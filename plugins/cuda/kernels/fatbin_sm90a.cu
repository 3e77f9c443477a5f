/* fatbin_sm90a.cu — the sm_90a fatbin's translation unit (SASS for sm_90a only: the wgmma kernels, loaded
 * on compute capability 9.0 devices only): the prefill kernels and the MLA kernels. */
#include "attn_prefill_sm90a.cu"
#include "mla_sm90a.cu"
