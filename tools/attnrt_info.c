/* attnrt-info: which plugins libattnrt found (and why any was refused), the devices they bring, and
 * which op / dtype / shape / feature combinations each device supports. Text by default, --json for
 * scripts. Exit status: 0 when at least one device opens, 1 when none does, 2 for a bad command line.
 * Uses only the public API (attnrt.h). */
#include <stdio.h>
#include <string.h>

#include "info_report.h"

static void usage(FILE *out)
{
    fputs("usage: attnrt-info [--json] [--help]\n"
          "Lists the plugins libattnrt finds (and why any is not loaded), their devices and what each\n"
          "device supports.\n"
          "  --json   one JSON document on stdout instead of text\n"
          "  --help   this text\n"
          "Environment: ATTNRT_PLUGIN (a name or absolute path: load only that plugin), ATTNRT_PLUGIN_PATH\n"
          "(more plugin directories), ATTNRT_DEVICE (the default device), ATTNRT_LOG=debug (every path tried).\n"
          "Exit status: 0 when at least one device opens, 1 when none does, 2 for a bad command line.\n",
          out);
}

int main(int argc, char **argv)
{
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "attnrt-info: unknown %s '%s'\n", argv[i][0] == '-' ? "option" : "argument", argv[i]);
            usage(stderr);
            return 2;
        }
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
