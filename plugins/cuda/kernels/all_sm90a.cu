/* all_sm90a.cu — the one translation unit of the plugin's second fatbin (sm_90a only: the wgmma
 * kernels, loaded on compute capability 9.0): the prefill kernels and the MLA kernels. */
#include "attn_prefill_sm90a.cu"
#include "mla_sm90a.cu"
