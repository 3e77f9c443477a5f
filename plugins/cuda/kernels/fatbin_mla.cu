/* fatbin_mla.cu — the MLA family's translation unit: nvcc turns it into one fatbin (the plugin's MLA
 * module: the SIMT and tensor-core MLA kernels and their split merge). */
#include "mla.cu"
#include "mla_mma.cu"
