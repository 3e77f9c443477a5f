/* conform_cases.c - the directed cases: rows of data (conform_cases_paged.c, conform_cases_mla.c,
 * conform_cases_linear.c) turned into cases by one function.
 *
 * The rows are written by hand so that every option of every op is exercised at least once in the
 * default run, including the boundaries (empty rows, an empty batch, window edges, block size 1 and odd
 * block sizes, all-padding writes, all-empty merges). The random sweep (conform_sweep.c) then mixes
 * the options freely.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform_case.h"
#include "conform_cases_directed.h"

/* FNV-1a of the tag: a case's seed stays the same when other cases are added or removed. */
static uint64_t tag_hash(const char *tag)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)tag; *p; p++) h = (h ^ *p) * 0x100000001b3ull;
    return h;
}

/* "q/kv q/kv ...": query length / seq_len per request. */
static void parse_batch(cf_case_t *c, const char *batch)
{
    c->num_seqs = 0;
    for (const char *p = batch; p && *p;) {
        int q, kv, n = 0;
        if (sscanf(p, " %d/%d%n", &q, &kv, &n) != 2 || c->num_seqs == CF_MAX_SEQS) break;
        c->q_lens[c->num_seqs] = q;
        c->kv_lens[c->num_seqs++] = kv;
        p += n;
    }
}

/* The rounds of a lightning or gated delta row (cf_row_t.batch). */
static void parse_rounds(cf_case_t *c, const char *text)
{
    const char *p = text;
    c->num_rounds = 0;
    while (*p && c->num_rounds < CF_MAX_ROUNDS) {
        cf_state_round_t *r = &c->rounds[c->num_rounds++];
        memset(r, 0, sizeof *r);
        while (*p == ' ') p++;
        if (*p == '!') {
            r->spec = 1;
            p++;
        }
        while (*p && *p != '|') {
            char *end = NULL;
            while (*p == ' ') p++;
            if (!*p || *p == '|') break;
            const long len = strtol(p, &end, 10);
            if (end == p || r->num_reqs == CF_MAX_SEQS) break;
            p = end;
            const int b = r->num_reqs++;
            r->q_lens[b] = (int)len;
            r->seq[b] = -1;
            r->accepted[b] = 1;
            if (*p == 'p') {
                p++;
                continue;
            }
            if (*p == 's') {
                r->seq[b] = (int)strtol(p + 1, &end, 10);
                p = end;
            }
            if (*p == 'i') {
                r->has_init[b] = 1;
                p++;
            }
            if (*p == 'a') {
                r->accepted[b] = (int)strtol(p + 1, &end, 10);
                p = end;
            }
        }
        while (*p && *p != '|') p++;
        if (*p == '|') p++;
    }
}

/* The case a row describes; -1 when the row contradicts itself (a table bug). */
static int case_from_row(const cf_row_t *r, uint64_t seed, cf_case_t *c)
{
    cf_case_defaults(c, r->op);
    snprintf(c->tag, sizeof c->tag, "%s", r->tag);
    c->seed = cf_case_seed(seed, tag_hash(r->tag));
    c->num_q_heads = r->hq;
    c->head_dim_qk = r->dqk;
    c->head_dim_v = r->dv;
    c->block_size = r->bs;
    if (r->op == CF_OP_LIGHTNING || r->op == CF_OP_GATED_DELTA) {
        parse_batch(c, "");
        parse_rounds(c, r->batch);
        c->num_kv_heads = r->hq;
        c->num_v_heads = r->hkv;
    } else {
        parse_batch(c, r->batch);
        c->num_kv_heads = r->hkv;
    }
    c->q_dtype = r->q;
    c->out_dtype = r->out;
    c->kv_dtype = r->kv;

    const unsigned f = r->features;
    c->lse = !!(f & CF_LSE);
    c->sinks = !!(f & CF_SINKS);
    c->alibi = !!(f & CF_ALIBI);
    c->causal = !(f & CF_NONCAUSAL);
    c->hnd = !!(f & CF_HND);
    c->per_block_scale = !!(f & CF_BLOCK_SCALE);
    c->kv_interleaved = !!(f & CF_INTERLEAVED);
    c->strided = !!(f & CF_STRIDED);
    c->write_direct = !!(f & CF_DIRECT_WRITE);
    c->plan_reuse = !!(f & CF_TWO_LAYERS);
    c->use_stream = !!(f & CF_STREAM);
    c->edge_values = !!(f & CF_EDGE_VALUES);
    c->all_empty_token = !!(f & CF_ALL_EMPTY_TOKEN);
    c->extreme_lse = !!(f & CF_EXTREME_LSE);
    c->sparse_host = !!(f & CF_SPARSE_HOST);
    c->sparse_invalid = !!(f & CF_SPARSE_INVALID);
    c->use_l2norm = !!(f & CF_L2NORM);
    c->zero_slope = !!(f & CF_ZERO_SLOPE);
    c->blockwise = !!(f & CF_BLOCKWISE);

    if (r->window.on) {
        c->window_left = r->window.left;
        c->window_right = r->window.right;
    }
    c->scale = r->scale;
    c->softcap = r->softcap;
    c->prefix_len = r->prefix;
    c->padding_slots = r->padding;
    c->max_model_len = r->mml;
    c->topk = r->topk;
    c->num_spec = r->spec;
    c->slope_max = r->slope_max;
    c->empty_fraction = r->empty;
    c->gb_dtype = r->gb;
    if (r->extra_slots) c->extra_slots = r->extra_slots;
    if (r->slot_ndim) c->slot_ndim = r->slot_ndim;
    if (r->states) c->num_states = r->states;
    if (r->tokens) c->num_tokens = r->tokens;

    for (int s = 0; s < c->num_seqs; s++)
        if (r->mml > 0 && c->kv_lens[s] > r->mml) return -1; /* the block table would be wider */
    return 0;
}

int cf_cases_directed(cf_case_list_t *list, uint64_t seed)
{
    const cf_table_t *const tables[] = {
        &cf_cases_attention, &cf_cases_cascade, &cf_cases_kv_write,   &cf_cases_merge,      &cf_cases_large_blocks,
        &cf_cases_mla,       &cf_cases_lightning, &cf_cases_gated_delta, &cf_cases_state_pool,
    };
    int failed = 0;
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        for (size_t i = 0; i < tables[t]->count; i++) {
            cf_case_t c;
            if (case_from_row(&tables[t]->rows[i], seed, &c) != 0 || !cf_case_list_add(list, &c)) failed = 1;
        }
    return failed ? -1 : 0;
}
