/* attnrt-info: which plugins libattnrt found (and why any was refused), the devices they bring, and
 * which op / dtype / shape / feature combinations each device supports. Text by default, --json for
 * scripts; --query asks one question of one device (info_query.c). Exit status: usage() says. Uses only
 * the public API (attnrt.h). */
#include <stdio.h>
#include <string.h>

#include "info_report.h"

static void usage(FILE *out)
{
    fputs("usage: attnrt-info [--json]\n"
          "       attnrt-info --query KEY=VALUE[,KEY=VALUE...] [--device NAME] [--json]\n"
          "       attnrt-info --version | --help\n"
          "Lists the plugins libattnrt finds (and why any is not loaded), their devices and what each\n"
          "device supports; or answers one capability question.\n"
          "  --json          one JSON document on stdout instead of text (schema: docs/tools.md)\n"
          "  --query SPEC    is this op / dtype / shape / feature combination supported? SPEC: op=OP (required),\n"
          "                  dtype=, q_dtype=, kv_dtype= (f32 f16 bf16 fp8_e4m3 fp8_e5m2), head_dim=,\n"
          "                  head_dim_qk=, head_dim_v=, block_size=, num_q_heads=, num_kv_heads=,\n"
          "                  features=NAME[+NAME...]; a field left out means any. Example:\n"
          "                  --query op=paged_attention,dtype=bf16,head_dim=128,block_size=16\n"
          "  --device NAME   the device --query asks (default: libattnrt's default device)\n"
          "  --version       the library's version and plugin ABI\n"
          "  --help          this text\n"
          "Environment: ATTNRT_PLUGIN (a name or absolute path: load only that plugin), ATTNRT_PLUGIN_PATH\n"
          "(more plugin directories), ATTNRT_DEVICE (the default device), ATTNRT_LOG=debug (every path tried).\n"
          "Exit status: 0 when at least one device opens (--query: supported), 1 when none does (--query:\n"
          "unsupported), 2 for a bad command line, 3 when --query could not be asked (no such device).\n",
          out);
}

/* The value of OPTION VALUE or OPTION=VALUE at argv[*i]; NULL when argv[*i] is not OPTION. */
static const char *option_value(int argc, char **argv, int *i, const char *option, int *missing)
{
    const size_t n = strlen(option);
    if (strncmp(argv[*i], option, n) != 0) return NULL;
    if (argv[*i][n] == '=') return argv[*i] + n + 1;
    if (argv[*i][n] != '\0') return NULL;
    if (*i + 1 >= argc) {
        *missing = 1;
        return NULL;
    }
    return argv[++*i];
}

int main(int argc, char **argv)
{
    int json = 0;
    const char *query = NULL, *device = NULL;
    for (int i = 1; i < argc; i++) {
        int missing = 0;
        const char *v;
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("attnrt-info: libattnrt %s\n", attnrt_version_string());
            return 0;
        } else if ((v = option_value(argc, argv, &i, "--query", &missing))) {
            query = v;
        } else if ((v = option_value(argc, argv, &i, "--device", &missing))) {
            device = v;
        } else {
            if (missing) fprintf(stderr, "attnrt-info: %s needs a value\n", argv[i]);
            else fprintf(stderr, "attnrt-info: unknown %s '%s'\n", argv[i][0] == '-' ? "option" : "argument", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (device && !query) {
        fputs("attnrt-info: --device goes with --query\n", stderr);
        usage(stderr);
        return 2;
    }
    if (query) {
        int status = info_query(query, device, json);
        if (attnrt_shutdown() != ATTNRT_OK) fprintf(stderr, "attnrt-info: %s\n", attnrt_last_error());
        return status;
    }

    report_t r = {0};
    info_gather(&r);
    int write_failed = 0;
    if (json) {
        write_failed = info_json_report(&r) != 0;
    } else {
        info_text_report(&r);
        write_failed = fflush(stdout) != 0 || ferror(stdout);
    }
    if (write_failed) fputs("attnrt-info: could not write the report to stdout\n", stderr);
    int status = r.usable_count > 0 && !write_failed ? 0 : 1;
    info_report_free(&r);
    if (attnrt_shutdown() != ATTNRT_OK) fprintf(stderr, "attnrt-info: %s\n", attnrt_last_error());
    return status;
}
