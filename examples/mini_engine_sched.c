/*
 * mini_engine_sched.c — the host side of continuous batching: requests, a paged block allocator and a
 * per-step scheduler with a token budget. Nothing here calls libattnrt; it only produces the batch
 * metadata (query_start_loc, seq_lens, block_table, slot_mapping) that the attention API consumes.
 *
 * A request's life: it arrives (waiting), is admitted when there is budget, a seat and free blocks,
 * has its prompt prefilled in chunks over one or more steps, then decodes one token per step until it
 * has output_len tokens, and its blocks go back to the pool. When the pool runs dry the newest running
 * request is preempted: its blocks are freed and it is recomputed from scratch later (vLLM's
 * "recompute" preemption), which is simpler than swapping its cache out and right for short prompts.
 * Recurrent (GDN) state is owned by the engine: on_release tells it when a request leaves its seat.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mini_engine.h"

static int blocks_for(int tokens, int block_size) { return (tokens + block_size - 1) / block_size; }

/* Tokens the request knows (prompt and sampled ones) that are not in the cache yet: 1 = a decode. */
static int pending(const request_t *r) { return r->prompt_len + r->generated - r->computed; }

/* ---- the block pool -------------------------------------------------------------------------- */

static int pool_init(block_pool_t *p, int num_blocks)
{
    p->free_ids = malloc((size_t)num_blocks * sizeof *p->free_ids);
    if (!p->free_ids) return 0;
    /* Handed out from the end, so block 0 goes first: easier to read in a debugger. */
    for (int i = 0; i < num_blocks; i++) p->free_ids[i] = num_blocks - 1 - i;
    p->num_free = p->num_total = num_blocks;
    return 1;
}

/* Grows r's block list until it holds `tokens` tokens; 0 when the pool ran dry (r keeps what it got). */
static int pool_grow(block_pool_t *p, request_t *r, int tokens, int block_size)
{
    int need = blocks_for(tokens, block_size);
    while (r->num_blocks < need) {
        if (p->num_free == 0) return 0;
        r->blocks[r->num_blocks++] = p->free_ids[--p->num_free];
    }
    return 1;
}

static void pool_release_all(block_pool_t *p, request_t *r)
{
    while (r->num_blocks > 0) p->free_ids[p->num_free++] = r->blocks[--r->num_blocks];
}

/* ---- request generation ---------------------------------------------------------------------- */

/* Log-normal lengths look like real traffic (many short prompts, a long tail). The median is the
 * geometric middle of [lo, hi] and sigma puts about 98% of draws inside it; the rest are clamped. */
static int lognormal_len(rng_t *rng, int lo, int hi)
{
    double u1 = rng_uniform(rng), u2 = rng_uniform(rng);
    double normal = sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2); /* Box-Muller; 1 - u1 > 0 */
    double sigma = log((double)hi / lo) / 4.6;
    double x = exp(0.5 * (log((double)lo) + log((double)hi)) + sigma * normal);
    return x < lo ? lo : x > hi ? hi : (int)x;
}

/* Knuth's Poisson sampler: fine for the small means of "requests per step". */
static int poisson(rng_t *rng, double mean)
{
    double limit = exp(-mean), p = 1.0;
    int k = 0;
    do {
        k++;
        p *= rng_uniform(rng);
    } while (p > limit);
    return k - 1;
}

static void request_free(request_t *r)
{
    if (!r) return;
    free(r->blocks);
    free(r);
}

int sched_arrivals(scheduler_t *s)
{
    for (int n = poisson(&s->rng, s->cfg->arrival_rate); n > 0; n--) {
        /* Room for everyone waiting or running, so that preempt() can always move one back here. */
        if (s->num_waiting + s->num_running == s->waiting_cap) {
            int cap = s->waiting_cap ? 2 * s->waiting_cap : 64;
            request_t **grown = realloc(s->waiting, (size_t)cap * sizeof *grown);
            if (!grown) return 0;
            s->waiting = grown;
            s->waiting_cap = cap;
        }
        request_t *r = calloc(1, sizeof *r);
        if (r) r->blocks = malloc((size_t)s->max_blocks_per_seq * sizeof *r->blocks);
        if (!r || !r->blocks) {
            request_free(r);
            return 0;
        }
        r->id = s->next_id++;
        r->state_slot = -1;
        r->prompt_len = lognormal_len(&s->rng, s->cfg->min_prompt, s->cfg->max_prompt);
        r->output_len = lognormal_len(&s->rng, s->cfg->min_output, s->cfg->max_output);
        s->waiting[s->num_waiting++] = r;
        s->arrived++;
    }
    return 1;
}

/* ---- scheduler state ------------------------------------------------------------------------- */

int sched_init(scheduler_t *s, const engine_config_t *cfg)
{
    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    s->rng.s = cfg->seed;
    s->max_blocks_per_seq = blocks_for(cfg->max_prompt + cfg->max_output, cfg->block_size);
    s->running = malloc((size_t)cfg->max_seqs * sizeof *s->running);
    return s->running && pool_init(&s->pool, blocks_for(cfg->pool_tokens, cfg->block_size));
}

void sched_destroy(scheduler_t *s)
{
    for (int i = 0; i < s->num_running; i++) request_free(s->running[i]);
    for (int i = 0; i < s->num_waiting; i++) request_free(s->waiting[i]);
    free(s->running);
    free(s->waiting);
    free(s->pool.free_ids);
    memset(s, 0, sizeof *s);
}

double sched_pool_used(const scheduler_t *s)
{
    return 1.0 - (double)s->pool.num_free / s->pool.num_total;
}

int batch_alloc(batch_t *b, const scheduler_t *s)
{
    const engine_config_t *cfg = s->cfg;
    memset(b, 0, sizeof *b);
    b->rows = malloc((size_t)cfg->max_seqs * sizeof *b->rows);
    b->query_start_loc = malloc((size_t)(cfg->max_seqs + 1) * sizeof *b->query_start_loc);
    b->seq_lens = malloc((size_t)cfg->max_seqs * sizeof *b->seq_lens);
    b->block_table = malloc((size_t)cfg->max_seqs * s->max_blocks_per_seq * sizeof *b->block_table);
    b->slot_mapping = malloc((size_t)cfg->max_batch_tokens * sizeof *b->slot_mapping);
    return b->rows && b->query_start_loc && b->seq_lens && b->block_table && b->slot_mapping;
}

void batch_free(batch_t *b)
{
    free(b->rows);
    free(b->query_start_loc);
    free(b->seq_lens);
    free(b->block_table);
    free(b->slot_mapping);
    memset(b, 0, sizeof *b);
}

/* ---- scheduling ------------------------------------------------------------------------------ */

/* Preempts running[i]: frees its blocks, drops it from this step and puts it first in line, to be
 * recomputed (prompt and the tokens it already sampled) once there is room. Returns the tokens it had
 * been given this step, which go back into the budget. */
static int preempt(scheduler_t *s, int i)
{
    request_t *r = s->running[i];
    int given_back = r->scheduled;
    if (s->on_release) s->on_release(s->release_user, r); /* its state is recomputed with the cache */
    pool_release_all(&s->pool, r);
    r->computed = r->scheduled = 0;
    memmove(s->running + i, s->running + i + 1, (size_t)(s->num_running - i - 1) * sizeof *s->running);
    s->num_running--;
    /* sched_arrivals keeps room for num_waiting + num_running, so this cannot overflow. */
    memmove(s->waiting + 1, s->waiting, (size_t)s->num_waiting * sizeof *s->waiting);
    s->waiting[0] = r;
    s->num_waiting++;
    s->preemptions++;
    return given_back;
}

/* Tokens of a prefill chunk for r that the pool can hold right now (without preempting anyone). */
static int chunk_that_fits(const scheduler_t *s, const request_t *r, int want, int reserve_blocks)
{
    int room = (r->num_blocks + s->pool.num_free - reserve_blocks) * s->cfg->block_size - r->computed;
    return room < want ? (room > 0 ? room : 0) : want;
}

static void schedule_tokens(scheduler_t *s)
{
    const int bs = s->cfg->block_size;
    int budget = s->cfg->max_batch_tokens;
    const long preempted = s->preemptions;
    for (int i = 0; i < s->num_running; i++) s->running[i]->scheduled = 0;

    /* 1. Decodes first: each costs one token and keeps a user's stream going. A decode that needs a
     *    new block and finds none preempts the newest request (possibly itself). */
    for (int i = 0; i < s->num_running && budget > 0; i++) {
        request_t *r = s->running[i];
        if (pending(r) != 1) continue;
        int preempted_self = 0;
        while (!pool_grow(&s->pool, r, r->computed + 1, bs)) {
            int victim = s->num_running - 1;
            preempted_self = victim == i;
            budget += preempt(s, victim);
            if (preempted_self) break;
        }
        if (preempted_self) break; /* r was the newest, so nothing follows it */
        r->scheduled = 1;
        budget--;
    }

    /* 2. Chunked prefill of running requests whose prompt is not all in the cache yet, oldest first,
     *    as much as the budget and the free blocks allow. */
    for (int i = 0; i < s->num_running && budget > 0; i++) {
        request_t *r = s->running[i];
        if (pending(r) <= 1 || r->scheduled) continue;
        int n = chunk_that_fits(s, r, pending(r) < budget ? pending(r) : budget, 0);
        if (n == 0) continue;
        pool_grow(&s->pool, r, r->computed + n, bs); /* fits by construction */
        r->scheduled = n;
        budget -= n;
    }

    /* 3. Admit waiting requests (FIFO) while budget, seats and blocks last, but not in a step that had
     *    to preempt (the victim would come straight back). A few blocks stay free so that the running
     *    requests' next decodes do not immediately preempt the newcomers. */
    const int watermark = s->pool.num_total / 50 + 1;
    while (budget > 0 && s->num_waiting > 0 && s->num_running < s->cfg->max_seqs && s->preemptions == preempted) {
        request_t *r = s->waiting[0];
        int n = chunk_that_fits(s, r, pending(r) < budget ? pending(r) : budget, watermark);
        if (n == 0) break;
        memmove(s->waiting, s->waiting + 1, (size_t)(s->num_waiting - 1) * sizeof *s->waiting);
        s->num_waiting--;
        s->running[s->num_running++] = r;
        pool_grow(&s->pool, r, r->computed + n, bs);
        r->scheduled = n;
        budget -= n;
    }
}

void sched_schedule(scheduler_t *s, batch_t *b)
{
    schedule_tokens(s);
    /* Partial prefills can fill the pool with nobody able to move; give the older ones room. */
    while (s->num_running > 1) {
        int any = 0;
        for (int i = 0; i < s->num_running; i++) any |= s->running[i]->scheduled > 0;
        if (any) break;
        preempt(s, s->num_running - 1);
        schedule_tokens(s);
    }

    /* Rows go in admission order, so decodes and prefill chunks interleave in one batch: the kernel
     * must not assume that all decodes come first. */
    const int bs = s->cfg->block_size, width = s->max_blocks_per_seq;
    memset(b->query_start_loc, 0, sizeof *b->query_start_loc);
    b->num_seqs = b->num_tokens = b->prefill_tokens = b->decode_tokens = 0;
    for (int i = 0; i < s->num_running; i++) {
        request_t *r = s->running[i];
        if (!r->scheduled) continue;
        int row = b->num_seqs++;
        b->rows[row] = r;
        b->seq_lens[row] = r->computed + r->scheduled;
        int32_t *bt = b->block_table + (size_t)row * width;
        memcpy(bt, r->blocks, (size_t)r->num_blocks * sizeof *bt);
        /* Columns past the request's blocks are never read (seq_lens bounds them); zero them anyway
         * so that a device copy holds no stale indices of another request. */
        memset(bt + r->num_blocks, 0, (size_t)(width - r->num_blocks) * sizeof *bt);
        for (int j = 0; j < r->scheduled; j++) {
            int pos = r->computed + j;
            b->slot_mapping[b->num_tokens + j] = (int64_t)r->blocks[pos / bs] * bs + pos % bs;
        }
        b->num_tokens += r->scheduled;
        b->query_start_loc[row + 1] = b->num_tokens;
        if (r->generated > 0 && pending(r) == 1) b->decode_tokens += 1;
        else b->prefill_tokens += r->scheduled;
    }
}

void sched_finish_step(scheduler_t *s)
{
    int kept = 0;
    for (int i = 0; i < s->num_running; i++) {
        request_t *r = s->running[i];
        r->computed += r->scheduled;
        /* Once every known token is in the cache the model emits the next one (the engine's sampler;
         * here it is just a count). */
        if (r->scheduled && pending(r) == 0) r->generated++;
        r->scheduled = 0;
        if (r->generated == r->output_len) {
            if (s->on_release) s->on_release(s->release_user, r);
            pool_release_all(&s->pool, r);
            request_free(r);
            s->completed++;
            continue;
        }
        s->running[kept++] = r;
    }
    s->num_running = kept;
}
