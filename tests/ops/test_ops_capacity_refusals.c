/* What attnrt_attention_plan_capacity, attnrt_plan_update and runs of capacity plans refuse: each call
 * must fail with the exact status and a one-line message from the function that names the argument and
 * the bound, write nothing (*plan keeps a sentinel; out and lse keep their poison), and leak nothing
 * (the teardown's attnrt_close must succeed). A refused update leaves the plan's batch as it was. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capacity_fixture.h"

#define SENTINEL_PLAN ((attnrt_plan_t *)(uintptr_t)0x5e5e5e5e)

/* out and lse on the host, to tell whether a refused call wrote them. */
typedef struct snapshot {
    unsigned char *out, *lse;
    size_t         out_bytes, lse_bytes;
} snapshot_t;

static void snap_take(const cap_fixture_t *f, snapshot_t *s)
{
    s->out_bytes = (size_t)f->cfg.max_tokens * (size_t)f->cfg.num_q_heads * (size_t)f->cfg.head_dim * sizeof(float);
    s->lse_bytes = (size_t)f->cfg.max_tokens * (size_t)f->cfg.num_q_heads * sizeof(float);
    s->out = malloc(s->out_bytes);
    s->lse = malloc(s->lse_bytes);
    assert_true(s->out && s->lse);
    CAP_OK(attnrt_mem_copy_to_host(f->ctx, s->out, f->d_out, s->out_bytes, NULL));
    CAP_OK(attnrt_mem_copy_to_host(f->ctx, s->lse, f->d_lse, s->lse_bytes, NULL));
}

/* Compares with the snapshot and frees it. */
static void snap_check(const cap_fixture_t *f, snapshot_t *s, const char *call)
{
    unsigned char *now = malloc(s->out_bytes);
    assert_non_null(now);
    CAP_OK(attnrt_mem_copy_to_host(f->ctx, now, f->d_out, s->out_bytes, NULL));
    int out_same = memcmp(now, s->out, s->out_bytes) == 0;
    CAP_OK(attnrt_mem_copy_to_host(f->ctx, now, f->d_lse, s->lse_bytes, NULL));
    int lse_same = memcmp(now, s->lse, s->lse_bytes) == 0;
    free(now);
    free(s->out);
    free(s->lse);
    if (!out_same || !lse_same) fail_msg("%s was refused but wrote %s", call, out_same ? "lse" : "out");
}

/* strstr for each part of "a&&b". */
static const char *missing_part(const char *msg, const char *needle, char *part, size_t cap)
{
    while (*needle) {
        const char *end = strstr(needle, "&&");
        size_t n = end ? (size_t)(end - needle) : strlen(needle);
        snprintf(part, cap, "%.*s", (int)n, needle);
        if (!strstr(msg, part)) return part;
        needle += n;
        if (end) needle += 2;
    }
    return NULL;
}

static void check_rejected(const char *call, const char *fn, attnrt_status_t got, attnrt_status_t expected,
                           const char *needle, int line)
{
    char msg[2048], part[512];
    snprintf(msg, sizeof msg, "%s", attnrt_last_error());
    if (got != expected)
        fail_msg("line %d: %s returned %s, expected %s; last error: \"%s\"", line, call, attnrt_status_name(got),
                 attnrt_status_name(expected), msg);
    if (!msg[0] || strchr(msg, '\n')) fail_msg("line %d: %s: empty or multi-line message \"%s\"", line, call, msg);
    if (strncmp(msg, fn, strlen(fn)) != 0) fail_msg("line %d: %s: message does not start with %s: \"%s\"", line, call, fn, msg);
    if (missing_part(msg, needle, part, sizeof part))
        fail_msg("line %d: %s: message \"%s\" does not contain \"%s\"", line, call, msg, part);
}

/* `call` must fail with `expected` and a message of `fn` containing `needle`, writing neither output. */
#define REJECTS(f, fn, call, expected, needle)                                        \
    do {                                                                              \
        snapshot_t snap_;                                                             \
        snap_take((f), &snap_);                                                       \
        attnrt_status_t st_ = (call);                                                 \
        check_rejected(#call, (fn), st_, (expected), (needle), __LINE__);             \
        snap_check((f), &snap_, #call);                                               \
    } while (0)

/* attnrt_attention_plan_capacity must fail as REJECTS says, and leave *plan as it was. */
#define PLAN_REJECTS(f, ctx, args, capacity, expected, needle)                                           \
    do {                                                                                                 \
        attnrt_plan_t *p_ = SENTINEL_PLAN;                                                               \
        REJECTS((f), "attnrt_attention_plan_capacity", attnrt_attention_plan_capacity((ctx), (args), (capacity), &p_), \
                (expected), (needle));                                                                   \
        if (p_ != SENTINEL_PLAN) {                                                                       \
            if (p_) cap_keep_plan((f), p_);                                                              \
            fail_msg("line %d: a refused attnrt_attention_plan_capacity wrote *plan", __LINE__);         \
        }                                                                                                \
    } while (0)

#define UPDATE_REJECTS(f, plan, batch, stream, expected, needle) \
    REJECTS((f), "attnrt_plan_update", attnrt_plan_update((plan), (batch), (stream)), (expected), (needle))

/* A capacity plan the test needs (kept for the teardown). */
static attnrt_plan_t *plan_ok(cap_fixture_t *f, const attnrt_capacity_t *capacity)
{
    attnrt_plan_t *p = NULL;
    CAP_OK(attnrt_attention_plan_capacity(f->ctx, &f->args, capacity, &p));
    return cap_keep_plan(f, p);
}

static void plan_refuses_null_arguments(void **state)
{
    cap_fixture_t *f = *state;
    PLAN_REJECTS(f, NULL, &f->args, &f->capacity, ATTNRT_ERR_INVALID_ARGUMENT, "ctx is NULL");
    PLAN_REJECTS(f, f->ctx, NULL, &f->capacity, ATTNRT_ERR_INVALID_ARGUMENT, "args is NULL");
    PLAN_REJECTS(f, f->ctx, &f->args, NULL, ATTNRT_ERR_INVALID_ARGUMENT, "capacity is NULL");
    REJECTS(f, "attnrt_attention_plan_capacity", attnrt_attention_plan_capacity(f->ctx, &f->args, &f->capacity, NULL),
            ATTNRT_ERR_INVALID_ARGUMENT, "plan is NULL");
    attnrt_capacity_t c = f->capacity;
    c.struct_size = 0;
    PLAN_REJECTS(f, f->ctx, &f->args, &c, ATTNRT_ERR_INVALID_ARGUMENT, "capacity->struct_size = 0");
}

static void plan_refuses_a_capacity_beyond_the_tensors(void **state)
{
    cap_fixture_t *f = *state;
    attnrt_capacity_t c = f->capacity;
    c.max_seqs = 9;
    PLAN_REJECTS(f, f->ctx, &f->args, &c, ATTNRT_ERR_INVALID_ARGUMENT, "capacity->max_seqs = 9 > block_table.shape[0]&&= 8");
    c = f->capacity;
    c.max_blocks_per_seq = 17;
    PLAN_REJECTS(f, f->ctx, &f->args, &c, ATTNRT_ERR_INVALID_ARGUMENT,
                 "capacity->max_blocks_per_seq = 17 > block_table.shape[1] = 16");
    c = f->capacity;
    c.max_tokens = 65;
    PLAN_REJECTS(f, f->ctx, &f->args, &c, ATTNRT_ERR_INVALID_ARGUMENT, "capacity->max_tokens = 65 > query.shape[0]&&= 64");
    c = f->capacity;
    c.max_seq_len = 257;
    PLAN_REJECTS(f, f->ctx, &f->args, &c, ATTNRT_ERR_INVALID_ARGUMENT,
                 "capacity->max_seq_len = 257 > max_blocks_per_seq 16 x block_size 16 = 256");
    c.max_blocks_per_seq = 4; /* the keys follow the blocks the capacity allows, not the table's columns */
    c.max_seq_len = 65;
    PLAN_REJECTS(f, f->ctx, &f->args, &c, ATTNRT_ERR_INVALID_ARGUMENT,
                 "capacity->max_seq_len = 65 > max_blocks_per_seq 4 x block_size 16 = 64");
}

static void plan_refuses_negative_fields(void **state)
{
    cap_fixture_t *f = *state;
    attnrt_capacity_t c = f->capacity;
    c.max_seqs = -1;
    PLAN_REJECTS(f, f->ctx, &f->args, &c, ATTNRT_ERR_INVALID_ARGUMENT, "capacity->max_seqs = -1; must be >= 0");
    c = f->capacity;
    c.max_blocks_per_seq = -2;
    PLAN_REJECTS(f, f->ctx, &f->args, &c, ATTNRT_ERR_INVALID_ARGUMENT, "capacity->max_blocks_per_seq = -2; must be >= 0");
    c = f->capacity;
    c.max_tokens = -3;
    PLAN_REJECTS(f, f->ctx, &f->args, &c, ATTNRT_ERR_INVALID_ARGUMENT, "capacity->max_tokens = -3; must be >= 0");
    c = f->capacity;
    c.max_seq_len = -4;
    PLAN_REJECTS(f, f->ctx, &f->args, &c, ATTNRT_ERR_INVALID_ARGUMENT, "capacity->max_seq_len = -4; must be >= 0");
}

/* An older, smaller attnrt_capacity_t (ending before max_seq_len) reads its missing field as 0 (the tensors'
 * bound): on an exact heap block, and with a refusable value past its struct_size; a newer, larger one
 * is refused when a byte this library does not know is set. */
static void plan_reads_older_capacities_and_refuses_unknown_fields(void **state)
{
    cap_fixture_t *f = *state;
    const size_t cut = offsetof(attnrt_capacity_t, max_seq_len);
    attnrt_capacity_t older = f->capacity;
    older.struct_size = cut;
    void *exact = malloc(cut); /* ends where the older struct ends: ASan / valgrind catch a read past it */
    assert_non_null(exact);
    memcpy(exact, &older, cut);
    CAP_OK(attnrt_attention_plan_capacity(f->ctx, &f->args, (const attnrt_capacity_t *)exact, &f->extra_plans[0]));
    free(exact);
    attnrt_capacity_t poisoned = f->capacity;
    poisoned.max_seq_len = 257; /* refused, if read */
    poisoned.struct_size = cut;
    CAP_OK(attnrt_attention_plan_capacity(f->ctx, &f->args, &poisoned, &f->extra_plans[1]));
    size_t want = 0, got0 = 0, got1 = 0;
    CAP_OK(attnrt_plan_workspace_size(f->plan, &want));
    CAP_OK(attnrt_plan_workspace_size(f->extra_plans[0], &got0));
    CAP_OK(attnrt_plan_workspace_size(f->extra_plans[1], &got1));
    assert_int_equal(got0, want);
    assert_int_equal(got1, want);

    struct { attnrt_capacity_t c; uint32_t unknown; } newer;
    memset(&newer, 0, sizeof newer);
    newer.c = f->capacity;
    newer.c.struct_size = sizeof newer;
    CAP_OK(attnrt_attention_plan_capacity(f->ctx, &f->args, &newer.c, &f->extra_plans[2]));
    newer.unknown = 1;
    PLAN_REJECTS(f, f->ctx, &f->args, &newer.c, ATTNRT_ERR_INVALID_ARGUMENT, "does not know is set");
}

/* The args are checked as attnrt_attention_plan checks them: the capacity tensors must agree. */
static void plan_refuses_tensors_that_disagree(void **state)
{
    cap_fixture_t *f = *state;
    attnrt_tensor_t qsl = f->qsl;
    qsl.shape[0] = f->cfg.max_seqs; /* max_seqs entries instead of max_seqs + 1 */
    attnrt_attention_args_t a = f->args;
    a.query_start_loc = &qsl;
    PLAN_REJECTS(f, f->ctx, &a, &f->capacity, ATTNRT_ERR_INVALID_ARGUMENT, "query_start_loc&&num_seqs + 1");
    attnrt_tensor_t sl = f->seq_lens;
    sl.shape[0] = f->cfg.max_seqs - 1;
    a = f->args;
    a.seq_lens = &sl;
    PLAN_REJECTS(f, f->ctx, &a, &f->capacity, ATTNRT_ERR_INVALID_ARGUMENT, "block_table");
    attnrt_tensor_t out = f->out;
    out.shape[0] = f->cfg.max_tokens - 1;
    a = f->args;
    a.out = &out;
    PLAN_REJECTS(f, f->ctx, &a, &f->capacity, ATTNRT_ERR_INVALID_ARGUMENT, "out&&num_tokens");
}

/* npu_sim plans per batch (its compiled graphs are per bucket): it has no capacity entries. */
static void npu_sim_has_no_capacity_plans(void **state)
{
    cap_fixture_t *f = *state;
    if (attnrt_open("npu_sim:0", &f->other_ctx) != ATTNRT_OK) { /* closed by the teardown */
        print_message("npu_sim:0 is not available here (%s): skipped\n", attnrt_last_error());
        skip();
    }
    attnrt_tensor_t t[8] = {f->query, f->key_cache, f->value_cache, f->block_table, f->qsl, f->seq_lens, f->out};
    for (int i = 0; i < 7; i++) t[i].data = NULL; /* plans read shapes only */
    attnrt_attention_args_t a = f->args;
    a.query = &t[0];
    a.key_cache = &t[1];
    a.value_cache = &t[2];
    a.block_table = &t[3];
    a.query_start_loc = &t[4];
    a.seq_lens = &t[5];
    a.out = &t[6];
    a.lse = NULL;
    attnrt_plan_t *p = SENTINEL_PLAN;
    attnrt_status_t st = attnrt_attention_plan_capacity(f->other_ctx, &a, &f->capacity, &p);
    if (st == ATTNRT_OK && p && p != SENTINEL_PLAN) cap_keep_plan(f, p);
    check_rejected("attnrt_attention_plan_capacity(npu_sim:0)", "attnrt_attention_plan_capacity", st,
                   ATTNRT_ERR_UNSUPPORTED, "npu_sim:0 has no capacity plans (plugin ABI 2.&&plan per batch with "
                   "attnrt_attention_plan", __LINE__);
    if (p != SENTINEL_PLAN) fail_msg("a refused attnrt_attention_plan_capacity wrote *plan");
}

static void update_refuses_null_and_foreign_arguments(void **state)
{
    cap_fixture_t *f = *state;
    const cap_request_t r[2] = {{1, 10}, {3, 30}};
    cap_write_batch(f, r, 2);
    UPDATE_REJECTS(f, NULL, &f->batch, NULL, ATTNRT_ERR_INVALID_ARGUMENT, "plan is NULL");
    UPDATE_REJECTS(f, f->plan, NULL, NULL, ATTNRT_ERR_INVALID_ARGUMENT, "batch is NULL");
    attnrt_batch_host_t b = f->batch;
    b.struct_size = 4;
    UPDATE_REJECTS(f, f->plan, &b, NULL, ATTNRT_ERR_INVALID_ARGUMENT, "batch->struct_size = 4");
    CAP_OK(attnrt_open(f->device, &f->other_ctx));
    CAP_OK(attnrt_stream_create(f->other_ctx, &f->other_stream));
    UPDATE_REJECTS(f, f->plan, &f->batch, f->other_stream, ATTNRT_ERR_INVALID_ARGUMENT,
                   "stream belongs to another context");
    /* a per-batch plan over the same tensors (a batch of exactly their shapes) takes no update */
    cap_request_t full[8];
    for (int i = 0; i < 8; i++) full[i] = (cap_request_t){8, 8 + i};
    cap_write_batch(f, full, 8);
    attnrt_plan_t *per_batch = NULL;
    CAP_OK(attnrt_attention_plan(f->ctx, &f->args, &f->batch, &per_batch));
    cap_keep_plan(f, per_batch);
    UPDATE_REJECTS(f, per_batch, &f->batch, NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                   "plan was made by attnrt_attention_plan; only attnrt_attention_plan_capacity plans take updates");
}

/* Each bound of a capacity smaller than its tensors, the request named. */
static void update_refuses_batches_beyond_each_bound(void **state)
{
    cap_fixture_t *f = *state;
    attnrt_capacity_t c = {.struct_size = sizeof c};
    c.max_seqs = 4;
    c.max_blocks_per_seq = 8;
    c.max_tokens = 32;
    c.max_seq_len = 100;
    attnrt_plan_t *p = plan_ok(f, &c);
    const cap_request_t five[5] = {{1, 5}, {1, 5}, {1, 5}, {1, 5}, {1, 5}};
    cap_write_batch(f, five, 5);
    UPDATE_REJECTS(f, p, &f->batch, NULL, ATTNRT_ERR_INVALID_ARGUMENT, "batch->num_seqs = 5 > max_seqs = 4");
    const cap_request_t tokens[2] = {{20, 40}, {13, 13}};
    cap_write_batch(f, tokens, 2);
    UPDATE_REJECTS(f, p, &f->batch, NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                   "batch->query_start_loc[2] = 33 (the batch's tokens) > max_tokens = 32");
    const cap_request_t keys[3] = {{1, 50}, {1, 101}, {1, 7}};
    cap_write_batch(f, keys, 3);
    UPDATE_REJECTS(f, p, &f->batch, NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                   "batch->seq_lens[1] = 101 (request 1) > max_seq_len = 100");
    /* max_blocks_per_seq bounds the keys when max_seq_len is left 0: 8 blocks of 16 */
    attnrt_capacity_t blocks = {.struct_size = sizeof blocks};
    blocks.max_blocks_per_seq = 8;
    attnrt_plan_t *pb = plan_ok(f, &blocks);
    const cap_request_t long_req[2] = {{1, 128}, {1, 129}};
    cap_write_batch(f, long_req, 2);
    UPDATE_REJECTS(f, pb, &f->batch, NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                   "batch->seq_lens[1] = 129 (request 1) > max_seq_len = 128");
    /* and a batch at those bounds is taken and runs */
    const cap_request_t at[4] = {{16, 100}, {1, 1}, {14, 14}, {1, 99}};
    cap_write_batch(f, at, 4);
    CAP_OK(attnrt_plan_update(p, &f->batch, NULL));
    size_t ws = 0;
    CAP_OK(attnrt_plan_workspace_size(p, &ws));
    void *d_ws = NULL;
    if (ws) CAP_OK(attnrt_mem_alloc(f->ctx, ws, &d_ws));
    CAP_OK(attnrt_attention_run(p, &f->args, d_ws, ws, NULL));
    if (d_ws) CAP_OK(attnrt_mem_free(f->ctx, d_ws));
    /* the default capacity refuses past the tensors: 9 requests do not fit 8 */
    const cap_request_t r[2] = {{1, 5}, {1, 5}};
    cap_write_batch(f, r, 2);
    attnrt_batch_host_t b = f->batch;
    b.num_seqs = 9;
    UPDATE_REJECTS(f, f->plan, &b, NULL, ATTNRT_ERR_INVALID_ARGUMENT, "batch->num_seqs = 9 > max_seqs = 8");
    b.num_seqs = -1;
    UPDATE_REJECTS(f, f->plan, &b, NULL, ATTNRT_ERR_INVALID_ARGUMENT, "batch->num_seqs = -1; must be >= 0");
}

/* Every index is checked as a per-batch plan checks it. */
static void update_refuses_bad_indices(void **state)
{
    cap_fixture_t *f = *state;
    const cap_request_t r[3] = {{4, 40}, {1, 20}, {2, 33}};
    cap_write_batch(f, r, 3);
    const int32_t cols = f->cfg.max_blocks;
    attnrt_batch_host_t b = f->batch;
    b.query_start_loc = NULL;
    UPDATE_REJECTS(f, f->plan, &b, NULL, ATTNRT_ERR_INVALID_ARGUMENT, "batch->query_start_loc is NULL");
    b = f->batch;
    b.seq_lens = NULL;
    UPDATE_REJECTS(f, f->plan, &b, NULL, ATTNRT_ERR_INVALID_ARGUMENT, "batch->seq_lens is NULL");
    b = f->batch;
    b.block_table_stride = cols + 1;
    UPDATE_REJECTS(f, f->plan, &b, NULL, ATTNRT_ERR_INVALID_ARGUMENT, "block_table_stride = 17 differs from "
                   "block_table.strides[0] = 16");

    const int32_t saved_block = f->h_block_table[1 * cols];
    f->h_block_table[1 * cols] = f->cfg.num_blocks;
    UPDATE_REJECTS(f, f->plan, &f->batch, NULL, ATTNRT_ERR_INVALID_ARGUMENT, "block_table[1][0] = 136 >= num_blocks = 136");
    f->h_block_table[1 * cols] = -1;
    UPDATE_REJECTS(f, f->plan, &f->batch, NULL, ATTNRT_ERR_INVALID_ARGUMENT, "block_table[1][0] = -1 < 0");
    f->h_block_table[1 * cols] = saved_block;

    f->h_qsl[2] = 3; /* 0, 4, 3: decreasing */
    UPDATE_REJECTS(f, f->plan, &f->batch, NULL, ATTNRT_ERR_INVALID_ARGUMENT, "query_start_loc is not monotonic");
    f->h_qsl[2] = 5;
    f->h_seq_lens[2] = 1; /* 2 new tokens, 1 key */
    UPDATE_REJECTS(f, f->plan, &f->batch, NULL, ATTNRT_ERR_INVALID_ARGUMENT, "seq_lens[2] = 1 < query length 2");
    f->h_seq_lens[2] = -5;
    UPDATE_REJECTS(f, f->plan, &f->batch, NULL, ATTNRT_ERR_INVALID_ARGUMENT, "seq_lens[2] = -5 < 0");
    f->h_seq_lens[2] = 33;
    f->h_qsl[0] = 1;
    UPDATE_REJECTS(f, f->plan, &f->batch, NULL, ATTNRT_ERR_INVALID_ARGUMENT, "query_start_loc[0] = 1; must be 0");
    f->h_qsl[0] = 0;
    CAP_OK(attnrt_plan_update(f->plan, &f->batch, NULL)); /* repaired, it is taken */
}

static void outputs_read(const cap_fixture_t *f, float *out, size_t bytes)
{
    CAP_OK(attnrt_mem_copy_to_host(f->ctx, out, f->d_out, bytes, NULL));
}

/* A refused update leaves the plan's batch as it was: the next run computes the old batch again. */
static void refused_update_keeps_the_batch(void **state)
{
    cap_fixture_t *f = *state;
    const cap_request_t r[3] = {{1, 100}, {6, 6}, {1, 250}};
    cap_write_batch(f, r, 3);
    CAP_OK(attnrt_plan_update(f->plan, &f->batch, NULL));
    const size_t bytes = (size_t)cap_batch_tokens(f) * (size_t)f->cfg.num_q_heads * (size_t)f->cfg.head_dim * 4;
    float *first = malloc(bytes), *again = malloc(bytes);
    assert_true(first && again);
    cap_poison_outputs(f);
    CAP_OK(attnrt_attention_run(f->plan, &f->args, f->d_ws, f->ws_bytes, NULL));
    outputs_read(f, first, bytes);
    attnrt_batch_host_t b = f->batch;
    b.num_seqs = 9;
    UPDATE_REJECTS(f, f->plan, &b, NULL, ATTNRT_ERR_INVALID_ARGUMENT, "max_seqs = 8");
    cap_poison_outputs(f);
    CAP_OK(attnrt_attention_run(f->plan, &f->args, f->d_ws, f->ws_bytes, NULL));
    outputs_read(f, again, bytes);
    double err = 0.0, norm = 0.0;
    for (size_t i = 0; i < bytes / 4; i++) {
        err += ((double)again[i] - first[i]) * ((double)again[i] - first[i]);
        norm += (double)first[i] * first[i];
    }
    const int same = memcmp(first, again, bytes) == 0;
    free(first);
    free(again);
    if (!(sqrt(err) <= 1e-6 * sqrt(norm)) || (strncmp(f->device, "cpu:", 4) == 0 && !same))
        fail_msg("after a refused update the run computed something else than the plan's batch");
}

static void run_refuses_a_plan_without_a_batch(void **state)
{
    cap_fixture_t *f = *state;
    attnrt_capacity_t c = {.struct_size = sizeof c};
    attnrt_plan_t *fresh = plan_ok(f, &c);
    REJECTS(f, "attnrt_attention_run", attnrt_attention_run(fresh, &f->args, f->d_ws, f->ws_bytes, NULL),
            ATTNRT_ERR_INVALID_ARGUMENT, "the capacity plan has no batch yet&&attnrt_plan_update");
    /* nor after a refused first update (a request of 300 keys, past max_seq_len, on the host only) */
    const cap_request_t r[1] = {{1, 200}};
    cap_write_batch(f, r, 1);
    f->h_seq_lens[0] = 300;
    UPDATE_REJECTS(f, fresh, &f->batch, NULL, ATTNRT_ERR_INVALID_ARGUMENT, "max_seq_len = 256");
    REJECTS(f, "attnrt_attention_run", attnrt_attention_run(fresh, &f->args, f->d_ws, f->ws_bytes, NULL),
            ATTNRT_ERR_INVALID_ARGUMENT, "no batch yet");
}

/* Runs take the capacity's tensors (what a graph captured), not tensors of the batch's shapes. */
static void run_refuses_batch_shaped_tensors(void **state)
{
    cap_fixture_t *f = *state;
    const cap_request_t r[2] = {{3, 30}, {1, 7}};
    cap_write_batch(f, r, 2);
    CAP_OK(attnrt_plan_update(f->plan, &f->batch, NULL));
    attnrt_tensor_t q = f->query, o = f->out;
    q.shape[0] = o.shape[0] = 4;
    attnrt_tensor_t lse = f->lse;
    lse.shape[0] = 4;
    attnrt_attention_args_t a = f->args;
    a.query = &q;
    a.out = &o;
    a.lse = &lse;
    REJECTS(f, "attnrt_attention_run", attnrt_attention_run(f->plan, &a, f->d_ws, f->ws_bytes, NULL),
            ATTNRT_ERR_INVALID_ARGUMENT, "query differs from the plan");
    attnrt_attention_args_t w = f->args;
    w.causal = 0;
    REJECTS(f, "attnrt_attention_run", attnrt_attention_run(f->plan, &w, f->d_ws, f->ws_bytes, NULL),
            ATTNRT_ERR_INVALID_ARGUMENT, "causal");
    CAP_OK(attnrt_open(f->device, &f->other_ctx));
    CAP_OK(attnrt_stream_create(f->other_ctx, &f->other_stream));
    REJECTS(f, "attnrt_attention_run", attnrt_attention_run(f->plan, &f->args, f->d_ws, f->ws_bytes, f->other_stream),
            ATTNRT_ERR_INVALID_ARGUMENT, "stream belongs to another context");
}

/* Other runners name the function that runs a capacity plan. */
static void other_runners_refuse_a_capacity_plan(void **state)
{
    cap_fixture_t *f = *state;
    attnrt_cascade_args_t cas = {sizeof cas, &f->args, &f->block_table, &f->seq_lens};
    REJECTS(f, "attnrt_cascade_run", attnrt_cascade_run(f->plan, &cas, f->d_ws, f->ws_bytes, NULL),
            ATTNRT_ERR_INVALID_ARGUMENT, "plan was made by attnrt_attention_plan_capacity; use attnrt_attention_run");
}

/* The workspace the plan reports is what a run needs, for every batch. */
static void run_refuses_a_short_workspace(void **state)
{
    cap_fixture_t *f = *state;
    const cap_request_t r[1] = {{1, 20}};
    cap_write_batch(f, r, 1);
    CAP_OK(attnrt_plan_update(f->plan, &f->batch, NULL));
    if (f->ws_bytes == 0) {
        print_message("%s asks no workspace for this capacity: nothing to refuse\n", f->device);
        return;
    }
    REJECTS(f, "attnrt_attention_run", attnrt_attention_run(f->plan, &f->args, f->d_ws, f->ws_bytes - 1, NULL),
            ATTNRT_ERR_INVALID_ARGUMENT, "workspace_bytes");
    REJECTS(f, "attnrt_attention_run", attnrt_attention_run(f->plan, &f->args, NULL, f->ws_bytes, NULL),
            ATTNRT_ERR_INVALID_ARGUMENT, "workspace is NULL");
}

int cap_run_refusal_tests(void)
{
#define SMALL(fn) cmocka_unit_test_setup_teardown(fn, cap_setup_small, cap_teardown)
    const struct CMUnitTest tests[] = {
        SMALL(plan_refuses_null_arguments),
        SMALL(plan_refuses_a_capacity_beyond_the_tensors),
        SMALL(plan_refuses_negative_fields),
        SMALL(plan_reads_older_capacities_and_refuses_unknown_fields),
        SMALL(plan_refuses_tensors_that_disagree),
        SMALL(npu_sim_has_no_capacity_plans),
        SMALL(update_refuses_null_and_foreign_arguments),
        SMALL(update_refuses_batches_beyond_each_bound),
        SMALL(update_refuses_bad_indices),
        SMALL(refused_update_keeps_the_batch),
        SMALL(run_refuses_a_plan_without_a_batch),
        SMALL(run_refuses_batch_shaped_tensors),
        SMALL(other_runners_refuse_a_capacity_plan),
        cmocka_unit_test_setup_teardown(run_refuses_a_short_workspace, cap_setup_long, cap_teardown),
    };
#undef SMALL
    return cmocka_run_group_tests_name("capacity plans: refusals", tests, NULL, NULL);
}
