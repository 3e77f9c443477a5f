/* conform_report.c - the text table and the JSON document (see conform_report.h). */
#include "conform_report.h"

#include <math.h>
#include <string.h>

static const char *status_word(cf_status_t s)
{
    return s == CF_PASS ? "pass" : s == CF_FAIL ? "FAIL" : "unsupported";
}

/* A JSON string literal. Bytes outside ASCII become '?': messages here are ASCII, and a stray byte
 * from a plugin must not make the document invalid UTF-8. */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p < 0x80 ? *p : '?', f);
    }
    fputc('"', f);
}

/* A JSON number, or null for what JSON cannot hold (NaN, inf). */
static void json_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

static void text_num(FILE *f, double v)
{
    if (isnan(v))
        fprintf(f, " %-9s", "-");
    else
        fprintf(f, " %-9.2e", v);
}

void cf_report_begin(cf_report_t *r, const char *device, const char *plugin_name, const char *plugin_version,
                     const char *plugin_path, size_t count)
{
    if (r->json) {
        fprintf(r->out, "{\n  \"tool\": \"attnrt-conform\",\n  \"library\": ");
        json_str(r->out, attnrt_version_string());
        fprintf(r->out, ",\n  \"device\": ");
        json_str(r->out, device);
        fprintf(r->out, ",\n  \"plugin\": {\"name\": ");
        json_str(r->out, plugin_name);
        fprintf(r->out, ", \"version\": ");
        json_str(r->out, plugin_version);
        fprintf(r->out, ", \"path\": ");
        json_str(r->out, plugin_path);
        fprintf(r->out, "},\n  \"seed\": \"0x%016llx\",\n  \"case_count\": %zu,\n  \"cases\": [",
                (unsigned long long)r->seed, count);
        return;
    }
    fprintf(r->out, "attnrt-conform %s: device %s (plugin %s %s, %s), seed 0x%016llx, %zu cases\n",
            attnrt_version_string(), device, plugin_name, plugin_version, plugin_path, (unsigned long long)r->seed,
            count);
    fprintf(r->out, "%-11s %-9s %-9s %-16s  %s\n", "status", "error", "tolerance", "case seed", "case");
}

void cf_report_case(cf_report_t *r, const cf_case_t *c, const char *name, const cf_result_t *res)
{
    r->passed += res->status == CF_PASS;
    if ((unsigned)c->op < CF_OP_COUNT_) r->passed_op[c->op] += res->status == CF_PASS;
    r->failed += res->status == CF_FAIL;
    r->unsupported += res->status == CF_UNSUPPORTED;
    if (r->json) {
        FILE *f = r->out;
        fprintf(f, "%s\n    {\"name\": ", r->cases_written++ ? "," : "");
        json_str(f, name);
        fprintf(f, ", \"tag\": ");
        json_str(f, c->tag);
        fprintf(f, ", \"op\": \"%s\", \"seed\": \"0x%016llx\", \"status\": \"%s\",\n     \"error\": ",
                cf_op_label(c->op), (unsigned long long)c->seed,
                res->status == CF_PASS ? "pass" : res->status == CF_FAIL ? "fail" : "unsupported");
        json_num(f, res->error);
        fprintf(f, ", \"lse_error\": ");
        json_num(f, res->lse_error);
        fprintf(f, ", \"tolerance\": ");
        json_num(f, res->tolerance);
        if (res->has_stats)
            fprintf(f, ", \"op_stats\": {\"time_us\": %.3f, \"bytes_moved\": %llu, \"flops\": %llu, \"partitions\": %llu, "
                    "\"padded_rows\": %llu, \"padding_tokens\": %llu, \"launches\": %llu}", res->stats_us,
                    res->stats_bytes, res->stats_flops, res->stats_partitions, res->stats_padded_rows,
                    res->stats_padding_tokens, res->stats_launches);
        fprintf(f, ", \"seconds\": %.4f, \"message\": ", res->seconds);
        json_str(f, res->message);
        fputc('}', f);
        return;
    }
    FILE *f = r->out;
    fprintf(f, "%-11s", status_word(res->status));
    text_num(f, res->error);
    text_num(f, res->tolerance);
    fprintf(f, " %016llx  %s", (unsigned long long)c->seed, name);
    if (r->verbose) {
        fprintf(f, " (%.3f s", res->seconds);
        if (!isnan(res->lse_error)) fprintf(f, ", lse error %.2e", res->lse_error);
        if (c->op == CF_OP_LIGHTNING || c->op == CF_OP_GATED_DELTA) { /* per round: q_len, 'p' padding */
            fprintf(f, ", rounds:");
            for (int i = 0; i < c->num_rounds; i++) {
                fprintf(f, "%s", i ? " |" : "");
                for (int b = 0; b < c->rounds[i].num_reqs; b++)
                    fprintf(f, " %d%s", c->rounds[i].q_lens[b], c->rounds[i].seq[b] < 0 ? "p" : "");
            }
        } else if (c->op != CF_OP_MERGE && c->op != CF_OP_STATE_POOL) {
            fprintf(f, ", q/kv:");
            for (int b = 0; b < c->num_seqs; b++) fprintf(f, " %d/%d", c->q_lens[b], c->kv_lens[b]);
        }
        fputc(')', f);
    }
    fputc('\n', f);
    if (r->verbose && res->has_stats)
        fprintf(f, "%12sop stats: %.1f us, %llu bytes, %llu flops, %llu partitions, %llu padded rows, %llu padding "
                "tokens, %llu launches\n", "", res->stats_us, res->stats_bytes, res->stats_flops, res->stats_partitions,
                res->stats_padded_rows, res->stats_padding_tokens, res->stats_launches);
    if (res->status != CF_PASS && res->message[0]) fprintf(f, "%12s%s\n", "", res->message);
    if (res->status == CF_FAIL)
        fprintf(f, "%12sreplay: %s%s%s --seed 0x%016llx --filter '%s '\n", "", r->argv0,
                r->replay && r->replay[0] ? " " : "", r->replay ? r->replay : "", (unsigned long long)r->seed, c->tag);
    fflush(f);
}

void cf_report_end(cf_report_t *r, double seconds, const char *note)
{
    if (r->json) {
        fprintf(r->out, "\n  ],\n  \"passed\": %d,\n  \"failed\": %d,\n  \"unsupported\": %d,\n  \"seconds\": %.3f,\n",
                r->passed, r->failed, r->unsupported, seconds);
        if (note) {
            fprintf(r->out, "  \"note\": ");
            json_str(r->out, note);
            fprintf(r->out, ",\n");
        }
        fprintf(r->out, "  \"summary\": \"%d passed, %d failed, %d unsupported\"\n}\n", r->passed, r->failed,
                r->unsupported);
        return;
    }
    fprintf(r->out, "%.2f s\n", seconds);
    if (note) fprintf(r->out, "%s\n", note);
    fprintf(r->out, "%d passed, %d failed, %d unsupported\n", r->passed, r->failed, r->unsupported);
}

void cf_report_fatal(cf_report_t *r, const char *message)
{
    if (r->json) {
        fprintf(r->out, "{\n  \"tool\": \"attnrt-conform\",\n  \"error\": ");
        json_str(r->out, message);
        fprintf(r->out, ",\n  \"summary\": \"0 passed, 0 failed, 0 unsupported\"\n}\n");
    } else {
        fprintf(stderr, "attnrt-conform: %s\n", message);
    }
}

void cf_report_list(cf_report_t *r, const cf_case_t *cases, char (*names)[CF_NAME_MAX], const int *selected,
                    size_t count)
{
    size_t shown = 0;
    if (r->json) fprintf(r->out, "{\n  \"seed\": \"0x%016llx\",\n  \"cases\": [", (unsigned long long)r->seed);
    for (size_t i = 0; i < count; i++) {
        if (!selected[i]) continue;
        if (r->json) {
            fprintf(r->out, "%s\n    {\"name\": ", shown ? "," : "");
            json_str(r->out, names[i]);
            fprintf(r->out, ", \"op\": \"%s\", \"seed\": \"0x%016llx\"}", cf_op_label(cases[i].op),
                    (unsigned long long)cases[i].seed);
        } else {
            fprintf(r->out, "%016llx  %s\n", (unsigned long long)cases[i].seed, names[i]);
        }
        shown++;
    }
    if (r->json)
        fprintf(r->out, "\n  ],\n  \"count\": %zu\n}\n", shown);
    else
        fprintf(r->out, "%zu cases\n", shown);
}
