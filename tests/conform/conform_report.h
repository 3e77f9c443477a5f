/* conform_report.h - the table (or one JSON document) attnrt-conform prints.
 *
 * Cases are reported as they finish, so a slow or crashing case shows where it happened. The text
 * ends with exactly the line "N passed, N failed, N unsupported"; --json prints the same in one
 * document on stdout.
 */
#ifndef ATTNRT_CONFORM_REPORT_H
#define ATTNRT_CONFORM_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "conform_case.h"

typedef struct cf_report {
    FILE       *out;
    int         json, verbose;
    uint64_t    seed;
    const char *argv0;
    const char *replay; /* the options a replay line repeats (--plugin, --device, ...), shell-quoted; "" for none */
    int         passed, failed, unsupported, cases_written;
    int         passed_op[CF_OP_COUNT_]; /* passes per op (--min-passed) */
} cf_report_t;

/* Header: device, the plugin serving it, seed, number of cases. Strings are borrowed for the call. */
void cf_report_begin(cf_report_t *r, const char *device, const char *plugin_name, const char *plugin_version,
                     const char *plugin_path, size_t count);
void cf_report_case(cf_report_t *r, const cf_case_t *c, const char *name, const cf_result_t *res);
/* Summary (and, in JSON, the end of the document). `note` (may be NULL) is one more line of text. */
void cf_report_end(cf_report_t *r, double seconds, const char *note);
/* A run that could not start (no device, plugin refused): the reason, as text or as JSON. */
void cf_report_fatal(cf_report_t *r, const char *message);
/* --list: the cases that would run, without running them. */
void cf_report_list(cf_report_t *r, const cf_case_t *cases, char (*names)[CF_NAME_MAX], const int *selected,
                    size_t count);

#endif
