/* conform_sweep.c - the random sweep: cases drawn over the whole parameter space of the ops (docs/semantics.md), each
 * from its own seed, with the options mixed freely. Sizes are bounded so that the float64 reference
 * stays cheap: a sweep case costs at most about CF_SWEEP_BUDGET multiply-adds there. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conform_case.h"
#include "conform_rng.h"

#define CF_SWEEP_BUDGET 6e6
#define CF_SWEEP_MLA_LINEAR_BUDGET 1.5e7 /* MLA's 576-wide rows, recurrent states */
#define SWEEP_SALT 0x5eed5eed5eed5eedull
#define SWEEP_MLA_LINEAR_SALT 0x12a5eed12a5eed12ull

static const int head_dims[] = {32, 64, 80, 96, 112, 128, 192, 256};
static const int block_sizes[] = {1, 16, 32, 64, 128, 7, 48};
static const int gqa_ratios[] = {1, 4, 8};
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static cf_dtype_t act_dtype(cf_rng_t *r) { return (cf_dtype_t)cf_rng_int(r, CF_F32, CF_BF16); }

static void random_heads(cf_case_t *c, cf_rng_t *r)
{
    c->head_dim_qk = c->head_dim_v = cf_rng_pick(r, head_dims, COUNT(head_dims));
    if (cf_rng_chance(r, 0.15)) { /* Dqk != Dv, e.g. 192/128 */
        static const int pairs[][2] = {{192, 128}, {96, 64}, {128, 64}, {64, 128}, {256, 128}};
        int i = cf_rng_int(r, 0, COUNT(pairs) - 1);
        c->head_dim_qk = pairs[i][0];
        c->head_dim_v = pairs[i][1];
    }
    if (cf_rng_chance(r, 0.15)) { /* MQA */
        c->num_kv_heads = 1;
        c->num_q_heads = cf_rng_int(r, 1, 8);
    } else {
        c->num_kv_heads = cf_rng_int(r, 1, 2);
        c->num_q_heads = c->num_kv_heads * cf_rng_pick(r, gqa_ratios, COUNT(gqa_ratios));
    }
}

static void random_cache(cf_case_t *c, cf_rng_t *r)
{
    c->block_size = cf_rng_pick(r, block_sizes, COUNT(block_sizes));
    static const cf_dtype_t kvs[] = {CF_F32, CF_F16, CF_BF16, CF_E4M3, CF_E5M2};
    c->kv_dtype = cf_rng_chance(r, 0.3) ? c->q_dtype : kvs[cf_rng_int(r, 0, 4)];
    c->per_block_scale = cf_dtype_is_fp8(c->kv_dtype) && cf_rng_chance(r, 0.5);
    c->hnd = cf_rng_chance(r, 0.3);
    c->kv_interleaved = cf_rng_chance(r, 0.15);
    c->write_direct = cf_rng_chance(r, 0.15);
    c->padding_slots = cf_rng_chance(r, 0.5) ? cf_rng_int(r, 1, 6) : 0;
}

/* One request: decode, prefill, chunked prefill, an empty query, or (non-causal) cross-attention. */
static void random_row(cf_case_t *c, cf_rng_t *r, int b)
{
    int q, kv;
    switch (cf_rng_int(r, 0, 9)) {
    case 0: case 1: case 2: q = 1; kv = cf_rng_int(r, 1, 300); break;        /* decode */
    case 3: case 4: q = kv = cf_rng_int(r, 1, 96); break;                    /* prefill */
    case 5: case 6: q = cf_rng_int(r, 2, 24); kv = q + cf_rng_int(r, 0, 200); break; /* chunked prefill */
    case 7: q = 0; kv = cf_rng_int(r, 0, 40); break;                         /* nothing new this step */
    default:
        q = cf_rng_int(r, 1, 12);
        kv = c->causal ? q + cf_rng_int(r, 0, 20) : cf_rng_int(r, 0, 24);  /* non-causal: kv may be < q */
        break;
    }
    c->q_lens[b] = q;
    c->kv_lens[b] = kv;
}

static double reference_cost(const cf_case_t *c)
{
    double cost = 0;
    for (int b = 0; b < c->num_seqs; b++)
        cost += (double)c->q_lens[b] * (c->kv_lens[b] + c->prefix_len) * c->num_q_heads * (c->head_dim_qk + c->head_dim_v);
    return cost;
}

static void random_batch(cf_case_t *c, cf_rng_t *r)
{
    c->num_seqs = cf_rng_int(r, 1, 8);
    for (int b = 0; b < c->num_seqs; b++) random_row(c, r, b);
    while (reference_cost(c) > CF_SWEEP_BUDGET) /* halve the lengths until the reference is cheap */
        for (int b = 0; b < c->num_seqs; b++) {
            c->q_lens[b] /= 2;
            c->kv_lens[b] = c->causal ? (c->kv_lens[b] / 2 > c->q_lens[b] ? c->kv_lens[b] / 2 : c->q_lens[b])
                                      : c->kv_lens[b] / 2;
        }
}

static void random_options(cf_case_t *c, cf_rng_t *r, int cascade)
{
    c->causal = cf_rng_chance(r, cascade ? 0.8 : 0.75);
    if (!cascade && cf_rng_chance(r, 0.3)) {
        const int left[] = {0, 1, c->block_size, cf_rng_int(r, 2, 64), -1};
        c->window_left = cf_rng_pick(r, left, COUNT(left));
        if (!c->causal && cf_rng_chance(r, 0.6)) {
            const int right[] = {0, 1, cf_rng_int(r, 2, 16), -1};
            c->window_right = cf_rng_pick(r, right, COUNT(right));
        }
    }
    if (cf_rng_chance(r, 0.2)) c->softcap = (float)cf_rng_range(r, 1.5, 30.0);
    if (cf_rng_chance(r, 0.15)) c->scale = (float)cf_rng_range(r, 0.05, 0.5);
    c->alibi = !cascade && cf_rng_chance(r, 0.15);
    c->sinks = cf_rng_chance(r, 0.25);
    c->lse = cf_rng_chance(r, 0.6);
    c->strided = cf_rng_chance(r, 0.2);
    c->plan_reuse = cf_rng_chance(r, 0.2);
    c->use_stream = cf_rng_chance(r, 0.2);
}

static void sweep_attention(cf_case_t *c, cf_rng_t *r, int cascade)
{
    c->q_dtype = act_dtype(r);
    c->out_dtype = cf_rng_chance(r, 0.25) ? CF_F32 : c->q_dtype;
    random_heads(c, r);
    random_cache(c, r);
    random_options(c, r, cascade);
    if (cascade) c->prefix_len = cf_rng_chance(r, 0.1) ? 0 : cf_rng_int(r, 1, 120);
    random_batch(c, r);
}

static void sweep_kv_write(cf_case_t *c, cf_rng_t *r)
{
    c->q_dtype = act_dtype(r);
    random_heads(c, r);
    random_cache(c, r);
    c->write_direct = 0;
    c->edge_values = cf_rng_chance(r, 0.5);
    c->use_stream = cf_rng_chance(r, 0.2);
    c->num_seqs = cf_rng_int(r, 1, 4);
    for (int b = 0; b < c->num_seqs; b++) c->kv_lens[b] = c->q_lens[b] = cf_rng_int(r, 0, 60);
}

static void sweep_merge(cf_case_t *c, cf_rng_t *r)
{
    c->num_states = cf_rng_int(r, 1, 6);
    c->num_tokens = cf_rng_int(r, 1, 24);
    c->num_q_heads = cf_rng_int(r, 1, 8);
    c->head_dim_v = cf_rng_pick(r, head_dims, COUNT(head_dims));
    c->q_dtype = act_dtype(r);
    c->out_dtype = cf_rng_chance(r, 0.3) ? CF_F32 : c->q_dtype;
    const double empties[] = {0.0, 0.2, 0.5};
    c->empty_fraction = empties[cf_rng_int(r, 0, 2)];
    c->all_empty_token = cf_rng_chance(r, 0.3);
    c->extreme_lse = cf_rng_chance(r, 0.2);
    c->sinks = cf_rng_chance(r, 0.25);
    c->lse = cf_rng_chance(r, 0.6);
    c->use_stream = cf_rng_chance(r, 0.2);
}

/* ---- ABI 1.2 ------------------------------------------------------------------------------------ */

static double mla_cost(const cf_case_t *c)
{
    double cost = 0;
    for (int b = 0; b < c->num_seqs; b++)
        cost += (double)c->q_lens[b] * (c->topk > 0 ? c->topk : c->kv_lens[b]) * c->num_q_heads *
                (c->head_dim_qk + c->head_dim_v);
    return cost;
}

static void sweep_mla(cf_case_t *c, cf_rng_t *r)
{
    static const int dims[][2] = {{576, 512}, {576, 512}, {64, 32}, {128, 64}, {96, 96}, {192, 128}};
    static const int heads[] = {1, 4, 8, 16, 16, 32, 128};
    static const int bss[] = {1, 16, 64, 64, 7, 48};
    const int di = cf_rng_int(r, 0, COUNT(dims) - 1);
    c->head_dim_qk = dims[di][0];
    c->head_dim_v = dims[di][1];
    c->num_q_heads = cf_rng_pick(r, heads, COUNT(heads));
    c->num_kv_heads = 1;
    c->block_size = cf_rng_pick(r, bss, COUNT(bss));
    c->q_dtype = act_dtype(r);
    c->out_dtype = cf_rng_chance(r, 0.2) ? CF_F32 : c->q_dtype;
    if (cf_rng_chance(r, 0.5)) {
        c->topk = cf_rng_int(r, 8, 64);
        c->sparse_host = cf_rng_chance(r, 0.3);
        c->sparse_invalid = cf_rng_chance(r, 0.6);
        c->causal = cf_rng_chance(r, 0.3); /* a flag sparse MLA must ignore */
        static const cf_dtype_t kvs[] = {CF_F32, CF_F16, CF_BF16, CF_E4M3, CF_E5M2, CF_E4M3};
        c->kv_dtype = cf_rng_chance(r, 0.3) ? c->q_dtype : kvs[cf_rng_int(r, 0, COUNT(kvs) - 1)];
        c->per_block_scale = cf_dtype_is_fp8(c->kv_dtype) && cf_rng_chance(r, 0.5);
    } else {
        c->causal = cf_rng_chance(r, 0.7);
        c->kv_dtype = cf_rng_chance(r, 0.5) ? c->q_dtype : act_dtype(r);
    }
    c->scale = cf_rng_chance(r, 0.5) ? (float)(0.07216878 * pow(cf_rng_range(r, 1.0, 1.4), 2.0))
                                     : (float)cf_rng_range(r, 0.05, 0.3);
    c->sinks = cf_rng_chance(r, 0.25);
    c->lse = cf_rng_chance(r, 0.6);
    c->strided = cf_rng_chance(r, 0.2);
    c->plan_reuse = cf_rng_chance(r, 0.2);
    c->use_stream = cf_rng_chance(r, 0.2);
    c->num_seqs = cf_rng_int(r, 1, 6);
    for (int b = 0; b < c->num_seqs; b++) {
        int q, kv;
        switch (cf_rng_int(r, 0, 5)) {
        case 0: case 1: case 2: q = 1; kv = cf_rng_int(r, 1, 300); break; /* decode */
        case 3: q = kv = cf_rng_int(r, 1, 96); break;                     /* prefill */
        default: q = cf_rng_int(r, 2, 24); kv = q + cf_rng_int(r, 0, 200); break;
        }
        c->q_lens[b] = q;
        c->kv_lens[b] = kv;
    }
    while (mla_cost(c) > CF_SWEEP_MLA_LINEAR_BUDGET) /* the prefix shrinks first, then the queries */
        for (int b = 0; b < c->num_seqs; b++) {
            if (c->kv_lens[b] / 2 >= c->q_lens[b])
                c->kv_lens[b] /= 2;
            else if (c->q_lens[b] > 1)
                c->kv_lens[b] = c->q_lens[b] = c->q_lens[b] / 2;
            else if (c->num_q_heads > 1)
                c->num_q_heads /= 2;
        }
}

static double state_cost(const cf_case_t *c)
{
    double tokens = 0;
    for (int i = 0; i < c->num_rounds; i++)
        for (int b = 0; b < c->rounds[i].num_reqs; b++) tokens += c->rounds[i].q_lens[b];
    return tokens * c->num_v_heads * c->head_dim_qk * c->head_dim_v * 4.0;
}

/* Random rounds: the first starts every sequence (prefill of any length, with or without a state),
 * later ones continue some of them (decode or a chunk; now and then a restart without a state);
 * padding rows anywhere; speculative rounds (GDN) with 1 ..= num_spec + 1 tokens and any num_accepted. */
static void random_rounds(cf_case_t *c, cf_rng_t *r, int spec_ok)
{
    const int seqs = cf_rng_int(r, 1, 6);
    static const int lens[] = {1, 2, 17, 63, 64, 65, 128, 129, 200};
    c->num_rounds = cf_rng_int(r, 1, CF_MAX_ROUNDS);
    for (int i = 0; i < c->num_rounds; i++) {
        cf_state_round_t *sr = &c->rounds[i];
        memset(sr, 0, sizeof *sr);
        sr->spec = spec_ok && (i > 0 || cf_rng_chance(r, 0.3)) && cf_rng_chance(r, 0.7);
        int order[CF_MAX_SEQS];
        for (int s = 0; s < seqs; s++) order[s] = s;
        cf_rng_shuffle(r, order, seqs);
        for (int k = 0; k < seqs && sr->num_reqs < CF_MAX_SEQS - 1; k++) {
            if (i > 0 && k > 0 && cf_rng_chance(r, 0.3)) continue; /* not scheduled this step */
            const int b = sr->num_reqs++;
            sr->seq[b] = order[k];
            sr->has_init[b] = i > 0 ? cf_rng_chance(r, 0.9) : cf_rng_chance(r, 0.5);
            if (sr->spec) {
                sr->q_lens[b] = cf_rng_int(r, 1, c->num_spec + 1);
                sr->accepted[b] = cf_rng_int(r, 1, c->num_spec + 1);
            } else if (i == 0) {
                sr->q_lens[b] = cf_rng_chance(r, 0.5) ? cf_rng_pick(r, lens, COUNT(lens)) : cf_rng_int(r, 1, 300);
            } else {
                sr->q_lens[b] = cf_rng_chance(r, 0.6) ? 1 : cf_rng_int(r, 1, 80);
            }
            sr->accepted[b] = sr->accepted[b] ? sr->accepted[b] : 1;
            if (cf_rng_chance(r, 0.15) && sr->num_reqs < CF_MAX_SEQS - 1) { /* a padding row after it */
                const int p = sr->num_reqs++;
                sr->seq[p] = -1;
                sr->q_lens[p] = sr->spec ? cf_rng_int(r, 1, c->num_spec + 1) : cf_rng_int(r, 1, 3);
                sr->accepted[p] = 1;
            }
        }
    }
    while (state_cost(c) > CF_SWEEP_MLA_LINEAR_BUDGET)
        for (int i = 0; i < c->num_rounds; i++)
            for (int b = 0; b < c->rounds[i].num_reqs; b++)
                if (!c->rounds[i].spec && c->rounds[i].q_lens[b] > 1) c->rounds[i].q_lens[b] /= 2;
    c->extra_slots = cf_rng_int(r, 1, 3);
}

static void sweep_lightning(cf_case_t *c, cf_rng_t *r)
{
    static const int dims[] = {32, 64, 128};
    c->head_dim_qk = cf_rng_pick(r, dims, COUNT(dims));
    c->head_dim_v = cf_rng_pick(r, dims, COUNT(dims));
    c->num_q_heads = c->num_v_heads = cf_rng_int(r, 1, 8);
    c->q_dtype = act_dtype(r);
    c->out_dtype = cf_rng_chance(r, 0.2) ? CF_F32 : c->q_dtype;
    c->slope_max = cf_rng_chance(r, 0.5) ? 0.0 : cf_rng_range(r, 0.2, 1.5);
    c->zero_slope = cf_rng_chance(r, 0.1);
    c->use_stream = cf_rng_chance(r, 0.2);
    random_rounds(c, r, 0);
}

static void sweep_gated_delta(cf_case_t *c, cf_rng_t *r)
{
    static const int dims[][2] = {{64, 64}, {128, 128}, {128, 64}, {32, 64}};
    static const int ratios[] = {1, 2, 4};
    const int di = cf_rng_int(r, 0, COUNT(dims) - 1);
    c->head_dim_qk = dims[di][0];
    c->head_dim_v = dims[di][1];
    c->num_q_heads = cf_rng_int(r, 1, 4);
    c->num_v_heads = c->num_q_heads * cf_rng_pick(r, ratios, COUNT(ratios));
    c->q_dtype = act_dtype(r);
    c->out_dtype = cf_rng_chance(r, 0.2) ? CF_F32 : c->q_dtype;
    c->gb_dtype = cf_rng_chance(r, 0.5) ? CF_F32 : c->q_dtype;
    c->use_l2norm = cf_rng_chance(r, 0.6);
    if (cf_rng_chance(r, 0.3)) c->scale = (float)cf_rng_range(r, 0.05, 0.5);
    c->use_stream = cf_rng_chance(r, 0.2);
    const int spec = cf_rng_chance(r, 0.35);
    c->num_spec = spec ? cf_rng_int(r, 1, 3) : 0;
    random_rounds(c, r, spec);
}

int cf_cases_sweep_size(int count) { return count + (count + 1) / 2; }

int cf_cases_sweep(cf_case_list_t *list, uint64_t seed, int count)
{
    for (int i = 0; i < count; i++) {
        cf_case_t c;
        const uint64_t case_seed = cf_case_seed(seed ^ SWEEP_SALT, (uint64_t)i);
        cf_rng_t r;
        cf_rng_init(&r, case_seed);
        /* the op and the parameters come from the case's own seed, so case i is the same case in
         * every sweep length */
        const int roll = cf_rng_int(&r, 0, 99);
        const cf_op_t op = roll < 55 ? CF_OP_ATTENTION : roll < 70 ? CF_OP_CASCADE : roll < 85 ? CF_OP_KV_WRITE : CF_OP_MERGE;
        cf_case_defaults(&c, op);
        c.seed = case_seed;
        snprintf(c.tag, sizeof c.tag, "sweep-%03d", i);
        switch (op) {
        case CF_OP_ATTENTION: sweep_attention(&c, &r, 0); break;
        case CF_OP_CASCADE:   sweep_attention(&c, &r, 1); break;
        case CF_OP_KV_WRITE:  sweep_kv_write(&c, &r); break;
        default:              sweep_merge(&c, &r); break;
        }
        if (!cf_case_list_add(list, &c)) return -1;
    }
    /* the 1.2 ops: a series of its own, so that the 1.1 sweep above stays what it was */
    for (int i = 0; i < (count + 1) / 2; i++) {
        cf_case_t c;
        const uint64_t case_seed = cf_case_seed(seed ^ SWEEP_MLA_LINEAR_SALT, (uint64_t)i);
        cf_rng_t r;
        cf_rng_init(&r, case_seed);
        const int roll = cf_rng_int(&r, 0, 99);
        const cf_op_t op = roll < 40 ? CF_OP_MLA : roll < 70 ? CF_OP_LIGHTNING : CF_OP_GATED_DELTA;
        cf_case_defaults(&c, op);
        c.seed = case_seed;
        snprintf(c.tag, sizeof c.tag, "sweep12-%03d", i);
        switch (op) {
        case CF_OP_MLA:       sweep_mla(&c, &r); break;
        case CF_OP_LIGHTNING: sweep_lightning(&c, &r); break;
        default:              sweep_gated_delta(&c, &r); break;
        }
        if (!cf_case_list_add(list, &c)) return -1;
    }
    return 0;
}
