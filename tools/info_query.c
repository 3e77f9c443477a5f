/* attnrt-info --query: one capability question ("is bf16 / head 128 / block 16 supported on cuda:0?")
 * asked of one device with attnrt_op_supported, answered as one line (or one JSON document) and the
 * exit status. SPEC is KEY=VALUE[,KEY=VALUE...]; a field left out is 0, which a plugin reads as "any". */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "info_report.h"
#include "json_writer.h"

enum { QUERY_SUPPORTED = 0, QUERY_UNSUPPORTED = 1, QUERY_BAD_SPEC = 2, QUERY_NOT_ASKED = 3 };

static const named_dtype_t query_dtypes[] = {
    {"f32", {ATTNRT_DTYPE_CODE_FLOAT, 32, 1}},        {"f16", {ATTNRT_DTYPE_CODE_FLOAT, 16, 1}},
    {"bf16", {ATTNRT_DTYPE_CODE_BFLOAT, 16, 1}},      {"fp8_e4m3", {ATTNRT_DTYPE_CODE_FLOAT8_E4M3FN, 8, 1}},
    {"fp8_e5m2", {ATTNRT_DTYPE_CODE_FLOAT8_E5M2, 8, 1}},
};

static const feature_set_t query_features[] = {
    {"causal", ATTNRT_FEATURE_CAUSAL},       {"sliding_window", ATTNRT_FEATURE_SLIDING_WINDOW},
    {"softcap", ATTNRT_FEATURE_SOFTCAP},     {"alibi", ATTNRT_FEATURE_ALIBI},
    {"sinks", ATTNRT_FEATURE_SINKS},         {"lse", ATTNRT_FEATURE_LSE},
    {"kv_scale_block", ATTNRT_FEATURE_KV_SCALE_BLOCK}, {"layout_hnd", ATTNRT_FEATURE_LAYOUT_HND},
    {"sparse", ATTNRT_FEATURE_SPARSE},
};

/* What was asked, and which fields the spec set (for the answer's wording). */
typedef struct query_spec {
    attnrt_op_query_t q;
    int               has_q_dtype, has_kv_dtype;
} query_spec_t;

static int parse_dtype(const char *v, attnrt_dtype_t *out)
{
    for (size_t i = 0; i < COUNT_OF(query_dtypes); i++)
        if (strcmp(v, query_dtypes[i].name) == 0) {
            *out = query_dtypes[i].dtype;
            return 0;
        }
    return -1;
}

static const char *dtype_label(attnrt_dtype_t dt)
{
    for (size_t i = 0; i < COUNT_OF(query_dtypes); i++)
        if (query_dtypes[i].dtype.code == dt.code && query_dtypes[i].dtype.bits == dt.bits) return query_dtypes[i].name;
    return "any";
}

static int parse_u32(const char *v, uint32_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long x = strtoul(v, &end, 10);
    if (errno || !end || *end || v[0] == '\0' || v[0] == '-' || v[0] == '+' || x > 1u << 20) return -1;
    *out = (uint32_t)x;
    return 0;
}

/* features=NAME[+NAME...] or features=none. */
static int parse_features(const char *v, uint32_t *bits)
{
    *bits = 0;
    if (strcmp(v, "none") == 0) return 0;
    while (*v) {
        const char *end = strchr(v, '+');
        const size_t len = end ? (size_t)(end - v) : strlen(v);
        size_t i = 0;
        while (i < COUNT_OF(query_features) &&
               (strlen(query_features[i].name) != len || strncmp(v, query_features[i].name, len) != 0))
            i++;
        if (i == COUNT_OF(query_features)) return -1;
        *bits |= query_features[i].bits;
        v = end ? end + 1 : v + len;
        if (end && !*v) return -1; /* a trailing '+' */
    }
    return 0;
}

static int parse_op(const char *v, uint32_t *op)
{
    for (uint32_t i = FIRST_OP; i <= LAST_OP; i++)
        if (strcmp(v, attnrt_op_name(i)) == 0) {
            *op = i;
            return 0;
        }
    return -1;
}

static void spec_usage(void)
{
    fputs("attnrt-info: --query takes KEY=VALUE[,KEY=VALUE...]; op is required:\n"
          "  op=kv_write|paged_attention|merge_states|cascade|mla|lightning|gated_delta\n"
          "  dtype=T (q_dtype and kv_dtype), q_dtype=T, kv_dtype=T   T: f32 f16 bf16 fp8_e4m3 fp8_e5m2\n"
          "  head_dim=N (head_dim_qk and head_dim_v), head_dim_qk=N, head_dim_v=N, block_size=N,\n"
          "  num_q_heads=N, num_kv_heads=N, features=NAME[+NAME...]|none   NAME: causal sliding_window\n"
          "  softcap alibi sinks lse kv_scale_block layout_hnd sparse\n"
          "A field left out is 0: \"any\" to the plugin.\n",
          stderr);
}

/* One KEY=VALUE of the spec into *s; 0 when understood, -1 (after a message) when not. */
static int parse_member(const char *member, query_spec_t *s, int *has_op)
{
    const char *eq = strchr(member, '=');
    if (!eq || eq == member) {
        fprintf(stderr, "attnrt-info: --query: '%s' is not KEY=VALUE\n", member);
        return -1;
    }
    const size_t klen = (size_t)(eq - member);
    const char *v = eq + 1;
    char key[32];
    if (klen >= sizeof key) {
        fprintf(stderr, "attnrt-info: --query: unknown key '%.*s'\n", (int)klen, member);
        return -1;
    }
    memcpy(key, member, klen);
    key[klen] = '\0';
    attnrt_op_query_t *q = &s->q;
    int bad = 0;
    if (!strcmp(key, "op")) {
        bad = parse_op(v, &q->op);
        *has_op = !bad;
    } else if (!strcmp(key, "dtype")) {
        attnrt_dtype_t dt;
        bad = parse_dtype(v, &dt);
        if (!bad && !s->has_q_dtype) q->q_dtype = dt;
        if (!bad && !s->has_kv_dtype) q->kv_dtype = dt;
    } else if (!strcmp(key, "q_dtype")) {
        bad = parse_dtype(v, &q->q_dtype);
        s->has_q_dtype = 1;
    } else if (!strcmp(key, "kv_dtype")) {
        bad = parse_dtype(v, &q->kv_dtype);
        s->has_kv_dtype = 1;
    } else if (!strcmp(key, "head_dim")) {
        bad = parse_u32(v, &q->head_dim_qk);
        q->head_dim_v = q->head_dim_qk;
    } else if (!strcmp(key, "head_dim_qk")) {
        bad = parse_u32(v, &q->head_dim_qk);
    } else if (!strcmp(key, "head_dim_v")) {
        bad = parse_u32(v, &q->head_dim_v);
    } else if (!strcmp(key, "block_size")) {
        bad = parse_u32(v, &q->block_size);
    } else if (!strcmp(key, "num_q_heads")) {
        bad = parse_u32(v, &q->num_q_heads);
    } else if (!strcmp(key, "num_kv_heads")) {
        bad = parse_u32(v, &q->num_kv_heads);
    } else if (!strcmp(key, "features")) {
        bad = parse_features(v, &q->features);
    } else {
        fprintf(stderr, "attnrt-info: --query: unknown key '%s'\n", key);
        return -1;
    }
    if (bad) fprintf(stderr, "attnrt-info: --query: bad value '%s' for %s\n", v, key);
    return bad ? -1 : 0;
}

static int parse_spec(const char *spec, query_spec_t *s)
{
    memset(s, 0, sizeof *s);
    s->q.struct_size = sizeof s->q;
    char *copy = info_must(strdup(spec));
    int has_op = 0, rc = 0;
    for (char *member = copy, *next; member && rc == 0; member = next) {
        next = strchr(member, ',');
        if (next) *next++ = '\0';
        rc = parse_member(member, s, &has_op);
    }
    free(copy);
    if (rc == 0 && !has_op) {
        fputs("attnrt-info: --query: op=... is required\n", stderr);
        rc = -1;
    }
    if (rc != 0) spec_usage();
    return rc;
}

/* The question in the spec's own words, fields left out omitted:
 * "paged_attention q_dtype=bf16 kv_dtype=bf16 head_dim_qk=128 head_dim_v=128 block_size=16 features=sinks+lse" */
static void appendf(char *out, size_t cap, size_t *n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void appendf(char *out, size_t cap, size_t *n, const char *fmt, ...)
{
    if (*n >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    const int w = vsnprintf(out + *n, cap - *n, fmt, ap);
    va_end(ap);
    if (w > 0) *n += (size_t)w;
}

static void describe(const attnrt_op_query_t *q, char *out, size_t cap)
{
    size_t n = 0;
#define APPEND(...) appendf(out, cap, &n, __VA_ARGS__)
    APPEND("%s", attnrt_op_name(q->op));
    if (q->q_dtype.bits) APPEND(" q_dtype=%s", dtype_label(q->q_dtype));
    if (q->kv_dtype.bits) APPEND(" kv_dtype=%s", dtype_label(q->kv_dtype));
    const struct { const char *key; uint32_t v; } nums[] = {
        {"head_dim_qk", q->head_dim_qk}, {"head_dim_v", q->head_dim_v},    {"block_size", q->block_size},
        {"num_q_heads", q->num_q_heads}, {"num_kv_heads", q->num_kv_heads},
    };
    for (size_t i = 0; i < COUNT_OF(nums); i++)
        if (nums[i].v) APPEND(" %s=%u", nums[i].key, nums[i].v);
    int any = 0;
    for (size_t i = 0; i < COUNT_OF(query_features); i++)
        if (q->features & query_features[i].bits) APPEND("%s%s", any++ ? "+" : " features=", query_features[i].name);
#undef APPEND
}

static void json_answer(const attnrt_op_query_t *q, const char *device, int answered, int supported,
                        const char *reason, const char *error)
{
    json_writer_t w;
    json_init(&w, stdout);
    json_begin_object(&w);
    json_member_uint(&w, "schema_version", INFO_SCHEMA_VERSION);
    json_member_string(&w, "tool", "attnrt-info");
    json_key(&w, "query");
    json_begin_object(&w);
    json_member_string(&w, "op", attnrt_op_name(q->op));
    json_member_string(&w, "q_dtype", q->q_dtype.bits ? dtype_label(q->q_dtype) : NULL);
    json_member_string(&w, "kv_dtype", q->kv_dtype.bits ? dtype_label(q->kv_dtype) : NULL);
    json_member_uint(&w, "head_dim_qk", q->head_dim_qk);
    json_member_uint(&w, "head_dim_v", q->head_dim_v);
    json_member_uint(&w, "block_size", q->block_size);
    json_member_uint(&w, "num_q_heads", q->num_q_heads);
    json_member_uint(&w, "num_kv_heads", q->num_kv_heads);
    json_key(&w, "features");
    json_begin_array_inline(&w);
    for (size_t i = 0; i < COUNT_OF(query_features); i++)
        if (q->features & query_features[i].bits) json_string(&w, query_features[i].name);
    json_end_array(&w);
    json_end_object(&w);
    json_member_string(&w, "device", device);
    json_key(&w, "supported");
    if (answered) json_bool(&w, supported);
    else json_null(&w);
    json_member_string(&w, "reason", reason);
    json_member_string(&w, "error", error);
    json_end_object(&w);
    if (json_finish(&w) != 0) fputs("attnrt-info: could not write the answer to stdout\n", stderr);
}

int info_query(const char *spec, const char *device, int json)
{
    query_spec_t s;
    if (parse_spec(spec, &s) != 0) return QUERY_BAD_SPEC;
    char what[256];
    describe(&s.q, what, sizeof what);

    attnrt_context_t *ctx = NULL;
    attnrt_status_t st = attnrt_open(device, &ctx);
    if (st != ATTNRT_OK) {
        char why[1024];
        snprintf(why, sizeof why, "cannot open %s: %s", device ? device : "the default device", attnrt_last_error());
        if (json) json_answer(&s.q, device, 0, 0, NULL, why);
        fprintf(stderr, "attnrt-info: %s\n", why);
        return QUERY_NOT_ASKED;
    }
    char name[ATTNRT_NAME_MAX];
    snprintf(name, sizeof name, "%s", attnrt_context_device_name(ctx));
    char reason[512] = "";
    st = attnrt_op_supported(ctx, &s.q, reason, sizeof reason);
    int status;
    if (st == ATTNRT_OK || st == ATTNRT_ERR_UNSUPPORTED) {
        const int ok = st == ATTNRT_OK;
        if (json) json_answer(&s.q, name, 1, ok, ok ? NULL : reason, NULL);
        else if (ok) printf("supported: %s on %s\n", what, name);
        else printf("unsupported: %s on %s: %s\n", what, name, reason);
        status = ok ? QUERY_SUPPORTED : QUERY_UNSUPPORTED;
    } else { /* the question itself was refused (a field the runtime checks) */
        char why[1024];
        snprintf(why, sizeof why, "%s: %s", attnrt_status_name(st), attnrt_last_error());
        if (json) json_answer(&s.q, name, 0, 0, NULL, why);
        fprintf(stderr, "attnrt-info: --query %s on %s: %s\n", what, name, why);
        status = QUERY_NOT_ASKED;
    }
    if (attnrt_close(ctx) != ATTNRT_OK) fprintf(stderr, "attnrt-info: %s\n", attnrt_last_error());
    if (!json && (fflush(stdout) != 0 || ferror(stdout))) {
        fputs("attnrt-info: could not write the answer to stdout\n", stderr);
        status = QUERY_NOT_ASKED;
    }
    return status;
}
