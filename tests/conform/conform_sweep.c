/* conform_sweep.c - the random sweep: cases drawn over the whole parameter space of issue #3, each
 * from its own seed, with the options mixed freely. Sizes are bounded so that the float64 reference
 * stays cheap: a sweep case costs at most about CF_SWEEP_BUDGET multiply-adds there. */
#include <stdio.h>
#include <string.h>

#include "conform_case.h"
#include "conform_rng.h"

#define CF_SWEEP_BUDGET 6e6
#define SWEEP_SALT 0x5eed5eed5eed5eedull

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
    return 0;
}
