/* conform_cli.c - attnrt-conform's command line and the run over the selected cases. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conform.h"
#include "conform_case.h"
#include "conform_ops.h"
#include "conform_report.h"

#define DEFAULT_SEED  0x00a77e2c0f0e1234ull
#define DEFAULT_SWEEP 40
#define EXIT_USAGE    2
#define EXIT_SKIP     77 /* what meson and automake read as "skipped" */
#define MAX_DEVICE_OPTIONS 8

typedef struct options {
    const char *plugin, *device, *filter;
    uint64_t    seed;
    long        cases;
    int         json, list, verbose, corrupt, streams;
    long        min_passed[CF_OP_COUNT_ + 1]; /* per op, then [CF_OP_COUNT_] for all ops; -1: none */
    attnrt_device_attribute_t dev_opts[MAX_DEVICE_OPTIONS]; /* --device-option: attnrt_open_with_options */
    uint32_t    num_dev_opts;
} options_t;

static void usage(FILE *f, const char *argv0)
{
    fprintf(f,
            "usage: %s [--plugin NAME|PATH] [--device NAME] [--device-option KEY=VALUE]... [--seed N]\n"
            "          [--filter SUBSTR] [--cases N] [--min-passed [OP=]N]... [--streams] [--json] [--list] [-v]\n"
            "       %s --version | --help\n"
            "Checks a libattnrt plugin against the float64 reference (docs/semantics.md).\n"
            "  --plugin NAME|PATH  load only this plugin (sets ATTNRT_PLUGIN)\n"
            "  --device NAME       device to test, e.g. cpu:0 (default: libattnrt's default device)\n"
            "  --device-option K=V open the device with this option (attnrt_open_with_options), e.g.\n"
            "                      front_end=compiled on npu_sim; repeatable (up to %d)\n"
            "  --seed N            global seed (decimal or 0x hex; default 0x%016llx)\n"
            "  --filter SUBSTR     run only the cases whose name contains SUBSTR\n"
            "  --cases N           random sweep cases after the directed ones (default %d), and\n"
            "                      (N + 1) / 2 more over the ABI 1.2 ops (MLA, lightning, gated delta)\n"
            "  --min-passed [OP=]N fail (exit 1) unless at least N cases of op OP passed (OP: attention,\n"
            "                      kv_write, merge, ... as --list names them, or all; N alone: all=N);\n"
            "                      repeatable. \"0 failed\" alone is also what a plugin refusing everything\n"
            "                      gets: a plugin's own test must set this\n"
            "  --streams           run every case on a stream of its own (else only the cases marked\n"
            "                      'stream' do; the rest on the NULL stream)\n"
            "  --json              one JSON document on stdout instead of the table\n"
            "  --list              list the selected cases without running them\n"
            "  -v, --verbose       per-case time, LSE error and batch\n"
            "  --version           the library's version and plugin ABI\n"
            "Exit status: 0 no failure, 1 a failure, too few passes for --min-passed, or the run could\n"
            "not start, 2 usage error.\n",
            argv0, argv0, MAX_DEVICE_OPTIONS, (unsigned long long)DEFAULT_SEED, DEFAULT_SWEEP);
}

/* The value of --opt VALUE or --opt=VALUE; NULL (and *i unchanged) when `arg` is another option. */
static const char *option_value(int argc, char **argv, int *i, const char *name, int *missing)
{
    const char *arg = argv[*i];
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0) return NULL;
    if (arg[n] == '=') return arg + n + 1;
    if (arg[n] != '\0') return NULL;
    if (*i + 1 >= argc) {
        *missing = 1;
        return NULL;
    }
    return argv[++*i];
}

static int parse_u64(const char *s, uint64_t *v)
{
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 0);
    if (errno || !end || *end || *s == '-' || *s == '\0') return -1;
    *v = x;
    return 0;
}

/* --min-passed OP=N, or N for all=N: 0 when stored, -1 when malformed. */
static int parse_min_passed(const char *v, options_t *o)
{
    const char *eq = strchr(v, '=');
    uint64_t n;
    if (!eq) {
        if (parse_u64(v, &n) || n > 1000000) return -1;
        o->min_passed[CF_OP_COUNT_] = (long)n;
        return 0;
    }
    if (parse_u64(eq + 1, &n) || n > 1000000) return -1;
    const size_t len = (size_t)(eq - v);
    if (len == 3 && !strncmp(v, "all", 3)) {
        o->min_passed[CF_OP_COUNT_] = (long)n;
        return 0;
    }
    for (int op = 0; op < CF_OP_COUNT_; op++) {
        const char *label = cf_op_label((cf_op_t)op);
        if (strlen(label) == len && !strncmp(v, label, len)) {
            o->min_passed[op] = (long)n;
            return 0;
        }
    }
    return -1;
}

/* --device-option KEY=VALUE: 0 when stored, -1 when malformed or one too many. */
static int parse_device_option(const char *v, options_t *o)
{
    const char *eq = strchr(v, '=');
    if (!eq || eq == v || o->num_dev_opts == MAX_DEVICE_OPTIONS) return -1;
    attnrt_device_attribute_t *a = &o->dev_opts[o->num_dev_opts];
    const size_t klen = (size_t)(eq - v), vlen = strlen(eq + 1);
    if (klen >= sizeof a->key || vlen >= sizeof a->value) return -1;
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    memcpy(a->key, v, klen);
    memcpy(a->value, eq + 1, vlen);
    o->num_dev_opts++;
    return 0;
}

/* 0: run; 1: help or the version was printed; -1: usage error (reported). */
static int parse(int argc, char **argv, options_t *o)
{
    memset(o, 0, sizeof *o);
    o->seed = DEFAULT_SEED;
    o->cases = DEFAULT_SWEEP;
    for (int op = 0; op <= CF_OP_COUNT_; op++) o->min_passed[op] = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int missing = 0;
        uint64_t n;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout, argv[0]);
            return 1;
        } else if (!strcmp(a, "--version")) {
            printf("attnrt-conform: libattnrt %s\n", attnrt_version_string());
            return 1;
        } else if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (!strcmp(a, "--streams")) {
            o->streams = 1;
        } else if (!strcmp(a, "--list")) {
            o->list = 1;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            o->verbose = 1;
        } else if (!strcmp(a, "--self-test-corrupt")) {
            o->corrupt = 1;
        } else if ((v = option_value(argc, argv, &i, "--plugin", &missing))) {
            o->plugin = v;
        } else if ((v = option_value(argc, argv, &i, "--device-option", &missing))) {
            if (parse_device_option(v, o)) {
                fprintf(stderr, "%s: --device-option %s: expected KEY=VALUE (at most %d of them)\n", argv[0], v,
                        MAX_DEVICE_OPTIONS);
                return -1;
            }
        } else if ((v = option_value(argc, argv, &i, "--device", &missing))) {
            o->device = v;
        } else if ((v = option_value(argc, argv, &i, "--filter", &missing))) {
            o->filter = v;
        } else if ((v = option_value(argc, argv, &i, "--seed", &missing))) {
            if (parse_u64(v, &o->seed)) {
                fprintf(stderr, "%s: --seed %s: expected a non-negative integer (decimal or 0x hex)\n", argv[0], v);
                return -1;
            }
        } else if ((v = option_value(argc, argv, &i, "--min-passed", &missing))) {
            if (parse_min_passed(v, o)) {
                fprintf(stderr, "%s: --min-passed %s: expected N or OP=N, OP an op name (attention, kv_write, merge, "
                        "...) or all\n", argv[0], v);
                return -1;
            }
        } else if ((v = option_value(argc, argv, &i, "--cases", &missing))) {
            if (parse_u64(v, &n) || n > 100000) {
                fprintf(stderr, "%s: --cases %s: expected an integer in 0..100000\n", argv[0], v);
                return -1;
            }
            o->cases = (long)n;
        } else {
            fprintf(stderr, missing ? "%s: %s needs a value\n" : "%s: unknown argument '%s'\n", argv[0], a);
            return -1;
        }
    }
    return 0;
}

/* Appends `word` to out (a shell command line), single-quoted unless it is made of characters no shell
 * treats specially. Returns -1 when it does not fit. */
static int append_shell_word(char *out, size_t cap, const char *word)
{
    size_t n = strlen(out);
    const int plain = word[0] && strspn(word, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./:=+,@%") ==
                                     strlen(word);
    if (n && n + 1 < cap) out[n++] = ' ';
    if (!plain && n + 1 < cap) out[n++] = '\'';
    for (const char *p = word; *p && n + 4 < cap; p++) {
        if (*p == '\'' && !plain) { /* close, an escaped quote, reopen */
            memcpy(out + n, "'\\''", 4);
            n += 4;
        } else {
            out[n++] = *p;
        }
    }
    if (!plain && n + 1 < cap) out[n++] = '\'';
    if (n + 1 >= cap) return -1;
    out[n] = '\0';
    return 0;
}

/* The options a failing case's replay line must repeat to run it the same way: the plugin, device and
 * device options, --streams, and a --cases other than the default (the sweep's cases depend on it). */
static int replay_options(const options_t *o, char *out, size_t cap)
{
    int rc = 0;
    char number[32];
    out[0] = '\0';
    if (o->plugin) rc |= append_shell_word(out, cap, "--plugin") | append_shell_word(out, cap, o->plugin);
    if (o->device) rc |= append_shell_word(out, cap, "--device") | append_shell_word(out, cap, o->device);
    for (uint32_t i = 0; i < o->num_dev_opts; i++) {
        char kv[sizeof o->dev_opts[i].key + sizeof o->dev_opts[i].value + 1];
        snprintf(kv, sizeof kv, "%s=%s", o->dev_opts[i].key, o->dev_opts[i].value);
        rc |= append_shell_word(out, cap, "--device-option") | append_shell_word(out, cap, kv);
    }
    if (o->streams) rc |= append_shell_word(out, cap, "--streams");
    if (o->cases != DEFAULT_SWEEP) {
        snprintf(number, sizeof number, "%ld", o->cases);
        rc |= append_shell_word(out, cap, "--cases") | append_shell_word(out, cap, number);
    }
    return rc;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static attnrt_status_t open_named(const options_t *o, const char *name, attnrt_context_t **ctx)
{
    return o->num_dev_opts ? attnrt_open_with_options(name, o->dev_opts, o->num_dev_opts, ctx) : attnrt_open(name, ctx);
}

/* Opens the device under test: the one asked for, else libattnrt's default, else the first there is
 * (a plugin chosen with --plugin may bring only a simulator, which is never a default). */
static attnrt_status_t open_device(const options_t *o, attnrt_context_t **ctx, char *why, size_t cap)
{
    attnrt_status_t st = attnrt_init();
    if (st != ATTNRT_OK) {
        snprintf(why, cap, "cannot start libattnrt: %s", attnrt_last_error());
        return st;
    }
    st = open_named(o, o->device, ctx);
    if (st != ATTNRT_OK && !o->device) {
        uint32_t count = 0;
        attnrt_device_properties_t props = {.struct_size = sizeof props};
        if (attnrt_device_count(&count) == ATTNRT_OK && count > 0 &&
            attnrt_device_get_properties(0, &props) == ATTNRT_OK)
            st = open_named(o, props.name, ctx);
    }
    if (st != ATTNRT_OK) snprintf(why, cap, "cannot open a device: %s", attnrt_last_error());
    return st;
}

static void plugin_of(const char *device, attnrt_plugin_info_t *info)
{
    uint32_t index = 0, plugin = 0;
    if (attnrt_device_find(device, &index) != ATTNRT_OK || attnrt_device_get_plugin(index, &plugin) != ATTNRT_OK ||
        attnrt_plugin_get_info(plugin, info) != ATTNRT_OK) {
        info->name = "?";
        info->version = "?";
        info->path = "?";
    }
}

/* Runs the selected cases; returns the exit status. */
static int run_cases(const options_t *o, cf_report_t *r, const cf_case_list_t *list, char (*names)[CF_NAME_MAX],
                     const int *selected, size_t count)
{
    attnrt_context_t *ctx = NULL;
    char why[1024];
    if (open_device(o, &ctx, why, sizeof why) != ATTNRT_OK) {
        cf_report_fatal(r, why);
        attnrt_shutdown();
        return 1;
    }
    const char *device = attnrt_context_device_name(ctx);
    attnrt_plugin_info_t info = ATTNRT_PLUGIN_INFO_INIT;
    plugin_of(device, &info);
    cf_report_begin(r, device, info.name, info.version, info.path, count);

    cf_env_t env = {ctx, o->corrupt};
    int corrupted = 0, caught = 0;
    const double start = now_seconds();
    for (size_t i = 0; i < list->count; i++) {
        if (!selected[i]) continue;
        cf_result_t res;
        cf_case_t c = list->items[i];
        c.use_stream |= o->streams;
        cf_run_case(&env, &c, &res);
        corrupted += res.corrupted;
        caught += res.corrupted && res.status == CF_FAIL;
        cf_report_case(r, &c, names[i], &res);
    }
    int status = r->failed ? 1 : 0;
    /* a run that passes nothing cannot fail: --min-passed makes "too little ran" a failure too */
    for (int op = 0; op <= CF_OP_COUNT_ && !o->corrupt; op++) {
        const int passed = op == CF_OP_COUNT_ ? r->passed : r->passed_op[op];
        if (o->min_passed[op] < 0 || passed >= o->min_passed[op]) continue;
        const char *label = op == CF_OP_COUNT_ ? "all" : cf_op_label((cf_op_t)op);
        fprintf(stderr, "attnrt-conform: %d cases passed (op %s), fewer than --min-passed %s=%ld\n", passed, label,
                label, o->min_passed[op]);
        status = 1;
    }
    if (r->passed == 0 && r->failed == 0 && !o->corrupt)
        fprintf(stderr, "attnrt-conform: warning: no case passed (%d unsupported): \"0 failed\" is also what a plugin "
                "that refuses everything gets; judge a plugin with --min-passed\n", r->unsupported);
    char note[256], *note_p = NULL;
    if (o->corrupt) {
        /* exit 1 (the should_fail test passes) only when every perturbed result was caught */
        snprintf(note, sizeof note, "self-test: %d of %d perturbed results reported as failures%s", caught, corrupted,
                 corrupted == 0 ? " (no case ran: nothing to perturb)" : "");
        note_p = note;
        status = corrupted == 0 ? EXIT_SKIP : caught == corrupted ? 1 : 0;
    }
    cf_report_end(r, now_seconds() - start, note_p);
    if (attnrt_close(ctx) != ATTNRT_OK) {
        fprintf(stderr, "attnrt-conform: attnrt_close: %s\n", attnrt_last_error());
        status = 1;
    }
    attnrt_shutdown();
    return status;
}

int cf_main(int argc, char **argv)
{
    options_t o;
    const int parsed = parse(argc, argv, &o);
    if (parsed == 1) return 0;
    if (parsed != 0) {
        usage(stderr, argv[0]);
        return EXIT_USAGE;
    }
    /* before any libattnrt call: plugin discovery reads the environment once */
    if (o.plugin && setenv("ATTNRT_PLUGIN", o.plugin, 1) != 0) {
        fprintf(stderr, "%s: cannot set ATTNRT_PLUGIN: %s\n", argv[0], strerror(errno));
        return 1;
    }
    cf_case_list_t list = {0};
    if (cf_cases_directed(&list, o.seed) != 0 || cf_cases_sweep(&list, o.seed, (int)o.cases) != 0) {
        fprintf(stderr, "%s: out of memory building the case list\n", argv[0]);
        cf_case_list_free(&list);
        return 1;
    }
    char(*names)[CF_NAME_MAX] = calloc(list.count + 1, sizeof *names);
    int *selected = calloc(list.count + 1, sizeof *selected);
    size_t count = 0;
    int status = 1;
    if (!names || !selected) {
        fprintf(stderr, "%s: out of memory\n", argv[0]);
        goto done;
    }
    for (size_t i = 0; i < list.count; i++) {
        cf_case_name(&list.items[i], names[i], CF_NAME_MAX);
        selected[i] = !o.filter || strstr(names[i], o.filter) != NULL;
        count += (size_t)selected[i];
    }
    char replay[2048];
    if (replay_options(&o, replay, sizeof replay) != 0) {
        fprintf(stderr, "%s: the options are too long to repeat in a replay line\n", argv[0]);
        goto done;
    }
    cf_report_t r = {.out = stdout, .json = o.json, .verbose = o.verbose, .seed = o.seed, .argv0 = argv[0],
                     .replay = replay};
    if (o.list) {
        cf_report_list(&r, list.items, names, selected, list.count);
        status = 0;
    } else if (count == 0) {
        fprintf(stderr, "%s: no case name contains '%s' (see --list)\n", argv[0], o.filter ? o.filter : "");
        status = EXIT_USAGE;
    } else {
        status = run_cases(&o, &r, &list, names, selected, count);
    }
done:
    free(names);
    free(selected);
    cf_case_list_free(&list);
    return status;
}
