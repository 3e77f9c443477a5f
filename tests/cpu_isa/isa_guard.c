/* isa_guard: runs a test under ATTNRT_CPU_ISA=<isa>, or skips it (exit 77) when this CPU or this build
 * has no such kernels. Before running it, checks that the cpu plugin really took the forced ISA (its
 * "isa" device attribute) and that an unknown ISA name is refused with a message naming it.
 *
 *   isa_guard ISA PROGRAM [ARGS...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attnrt.h"

#define SKIP 77

static int isa_attribute(char *out, size_t cap)
{
    uint32_t idx;
    attnrt_device_properties_t p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    if (attnrt_device_find("cpu:0", &idx) != ATTNRT_OK || attnrt_device_get_properties(idx, &p) != ATTNRT_OK) return -1;
    for (uint32_t i = 0; i < p.attribute_count; i++) {
        attnrt_device_attribute_t a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        if (attnrt_device_get_attribute(idx, i, &a) == ATTNRT_OK && !strcmp(a.key, "isa")) {
            snprintf(out, cap, "%s", a.value);
            return 0;
        }
    }
    return -1;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: isa_guard ISA PROGRAM [ARGS...]\n");
        return 2;
    }
    const char *isa = argv[1];

    /* An unknown name is refused at device open, naming the variable and the choices. */
    setenv("ATTNRT_CPU_ISA", "avx9000", 1);
    attnrt_context_t *ctx = NULL;
    attnrt_status_t st = attnrt_open("cpu:0", &ctx);
    if (st == ATTNRT_OK || !strstr(attnrt_last_error(), "ATTNRT_CPU_ISA=avx9000")) {
        fprintf(stderr, "isa_guard: ATTNRT_CPU_ISA=avx9000 was not refused by name (%s)\n", attnrt_last_error());
        return 1;
    }
    attnrt_shutdown();

    setenv("ATTNRT_CPU_ISA", isa, 1);
    st = attnrt_open("cpu:0", &ctx);
    if (st == ATTNRT_ERR_UNSUPPORTED) {
        printf("isa_guard: skipped: %s\n", attnrt_last_error());
        return SKIP;
    }
    if (st != ATTNRT_OK) {
        fprintf(stderr, "isa_guard: cannot open cpu:0 with ATTNRT_CPU_ISA=%s: %s\n", isa, attnrt_last_error());
        return 1;
    }
    char chosen[200] = "";
    if (isa_attribute(chosen, sizeof chosen) != 0 || strncmp(chosen, isa, strlen(isa)) != 0 ||
        !strstr(chosen, "forced")) {
        fprintf(stderr, "isa_guard: the cpu plugin reports isa '%s', expected '%s (forced ...)'\n", chosen, isa);
        return 1;
    }
    attnrt_close(ctx);
    attnrt_shutdown();
    printf("isa_guard: cpu:0 runs the %s kernels; running %s\n", chosen, argv[2]);
    fflush(stdout);
    execv(argv[2], argv + 2);
    perror("isa_guard: execv");
    return 1;
}
