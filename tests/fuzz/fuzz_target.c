/* fuzz_target.c - the libFuzzer entry point: byte 0 picks the op, the rest is that op's input
 * (see fuzz.h). Built with -fsanitize=fuzzer in the fuzz build, and into the corpus replayer otherwise. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in_t in = {data, size};
    switch (fz_byte(&in) % 4) {
    case 0:  fz_attention(&in); break;
    case 1:  fz_kv_write(&in); break;
    case 2:  fz_lightning(&in); break;
    default: fz_gated_delta(&in); break;
    }
    return 0;
}
