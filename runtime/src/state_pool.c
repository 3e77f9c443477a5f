/* State-slot pools: one device allocation [num_slots, slot_shape...] made through the context's plugin
 * (a live allocation of the context, so attnrt_close counts it), and a host bitmap of the slots in use.
 * alloc / free take the pool's mutex; zero and copy run on the device in stream order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state_pool.h"
#include "tensor.h"

static int slot_used(const attnrt_state_pool_t *pool, int32_t slot)
{
    return (int)((pool->used[(uint32_t)slot / 64u] >> ((uint32_t)slot % 64u)) & 1u);
}

static void pool_lock(const attnrt_state_pool_t *pool)
{
    pthread_mutex_lock(&((attnrt_state_pool_t *)pool)->lock); /* reading the bitmap needs the lock too */
}

static void pool_unlock(const attnrt_state_pool_t *pool)
{
    pthread_mutex_unlock(&((attnrt_state_pool_t *)pool)->lock);
}

/* The check with the lock held. */
static attnrt_status_t check_slot_locked(const char *fn, const char *arg, const attnrt_state_pool_t *pool,
                                         int32_t slot)
{
    if (slot < 0) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s = %d < 0", fn, arg, slot);
    if (slot >= pool->num_slots)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s = %d >= num_slots = %d", fn, arg, slot,
                           pool->num_slots);
    if (!slot_used(pool, slot))
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s = %d: slot %d is not allocated in the pool (freed or "
                           "never allocated)", fn, arg, slot, slot);
    return ATTNRT_OK;
}

attnrt_status_t attnrt_state_pool_check_slot(const char *fn, const char *arg, const attnrt_state_pool_t *pool,
                                             int32_t slot)
{
    pool_lock(pool);
    attnrt_status_t st = check_slot_locked(fn, arg, pool, slot);
    pool_unlock(pool);
    return st;
}

attnrt_status_t attnrt_state_pool_check_tensor(const char *fn, const attnrt_state_pool_t *pool,
                                               const attnrt_tensor_t *state)
{
    const attnrt_tensor_t *own = &pool->tensor;
    static const char hint[] = "pass the tensor attnrt_state_pool_tensor(pool) fills";
    if (state->data != own->data)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: state is not the pool's tensor: state.data = %p, the "
                           "pool's is %p; %s", fn, state->data, own->data, hint);
    if (!attnrt_dtype_equal(state->dtype, own->dtype))
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: state is not the pool's tensor: state.dtype = %s, the "
                           "pool's is %s; %s", fn, attnrt_dtype_name(state->dtype), attnrt_dtype_name(own->dtype), hint);
    if (state->ndim != own->ndim)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: state is not the pool's tensor: state.ndim = %d, the "
                           "pool's is %d; %s", fn, state->ndim, own->ndim, hint);
    for (int32_t d = 0; d < own->ndim; d++) {
        if (state->shape[d] != own->shape[d])
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: state is not the pool's tensor: state.shape[%d] = "
                               "%lld, the pool's is %lld; %s", fn, d, (long long)state->shape[d],
                               (long long)own->shape[d], hint);
        if (state->strides[d] != own->strides[d])
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: state is not the pool's tensor: state.strides[%d] = "
                               "%lld, the pool's is %lld (contiguous); %s", fn, d, (long long)state->strides[d],
                               (long long)own->strides[d], hint);
    }
    return ATTNRT_OK;
}

attnrt_status_t attnrt_state_pool_create(attnrt_context_t *ctx, attnrt_dtype_t dtype, int32_t slot_ndim,
                                         const int64_t *slot_shape, int32_t num_slots, attnrt_state_pool_t **pool)
{
    static const char fn[] = "attnrt_state_pool_create";
    attnrt_clear_error();
    if (!ctx || !slot_shape || !pool)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                           !ctx ? "ctx" : !slot_shape ? "slot_shape" : "pool");
    if (slot_ndim < 1 || slot_ndim > ATTNRT_MAX_DIMS - 1)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: slot_ndim = %d, expected 1..%d (the pool adds a slot "
                           "dimension; tensors have at most %d)", fn, slot_ndim, ATTNRT_MAX_DIMS - 1, ATTNRT_MAX_DIMS);
    if (num_slots < 1)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: num_slots = %d; must be >= 1", fn, num_slots);
    for (int32_t d = 0; d < slot_ndim; d++)
        if (slot_shape[d] < 1 || slot_shape[d] > INT32_MAX)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: slot_shape[%d] = %lld is out of range [1, 2^31)", fn,
                               d, (long long)slot_shape[d]);
    size_t slot_bytes = attnrt_dtype_size(dtype), bytes;
    if (slot_bytes == 0)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: dtype {code %u, bits %u, lanes %u} is not one libattnrt "
                           "knows", fn, dtype.code, dtype.bits, dtype.lanes);
    int overflow = 0;
    for (int32_t d = 0; d < slot_ndim; d++) overflow |= __builtin_mul_overflow(slot_bytes, (size_t)slot_shape[d], &slot_bytes);
    if (overflow || __builtin_mul_overflow(slot_bytes, (size_t)num_slots, &bytes) || bytes > (size_t)INT64_MAX)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %d slots of this shape and dtype overflow the size of "
                           "an allocation", fn, num_slots);
    int64_t shape[ATTNRT_MAX_DIMS] = {num_slots};
    memcpy(shape + 1, slot_shape, (size_t)slot_ndim * sizeof *slot_shape);
    attnrt_tensor_t t;
    TRY(attnrt_tensor_init(&t, NULL, dtype, slot_ndim + 1, shape)); /* cannot fail after the checks above */

    attnrt_state_pool_t *p = calloc(1, sizeof *p);
    uint64_t *used = calloc(((size_t)num_slots + 63) / 64, sizeof *used);
    if (!p || !used) {
        free(p);
        free(used);
        return attnrt_fail(ATTNRT_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    void *data = NULL;
    attnrt_status_t st = ctx->api->mem_alloc(ctx->device, bytes, &data);
    if (st != ATTNRT_OK) {
        free(p);
        free(used);
        char what[192];
        snprintf(what, sizeof what, "%s(%s, %d slots of %zu bytes)", fn, ctx->ref->name, num_slots, slot_bytes);
        return attnrt_context_fail(ctx, st, what);
    }
    if (!data) {
        free(p);
        free(used);
        return attnrt_fail(ATTNRT_ERR_PLUGIN, "%s(%s): the %s plugin's mem_alloc returned success with a NULL "
                           "pointer; the plugin is broken", fn, ctx->ref->name, ctx->ref->plugin->name);
    }
    pthread_mutex_init(&p->lock, NULL);
    p->ctx = ctx;
    p->tensor = t;
    p->tensor.data = data;
    p->num_slots = num_slots;
    p->slot_bytes = slot_bytes;
    p->num_free = num_slots;
    p->used = used;
    atomic_fetch_add(&ctx->live_pools, 1); /* attnrt_close refuses while the pool lives */
    *pool = p;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_state_pool_destroy(attnrt_state_pool_t *pool)
{
    attnrt_clear_error();
    if (!pool) return ATTNRT_OK;
    attnrt_context_t *ctx = pool->ctx;
    ctx->api->mem_free(ctx->device, pool->tensor.data);
    atomic_fetch_sub(&ctx->live_pools, 1);
    pthread_mutex_destroy(&pool->lock);
    free(pool->used);
    free(pool);
    return ATTNRT_OK;
}

attnrt_status_t attnrt_state_pool_tensor(const attnrt_state_pool_t *pool, attnrt_tensor_t *tensor)
{
    attnrt_clear_error();
    if (!pool || !tensor)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_state_pool_tensor: %s is NULL", pool ? "tensor" : "pool");
    *tensor = pool->tensor;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_state_pool_usage(const attnrt_state_pool_t *pool, int32_t *num_slots, int32_t *num_free)
{
    attnrt_clear_error();
    if (!pool) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_state_pool_usage: pool is NULL");
    pool_lock(pool);
    int32_t free_now = pool->num_free;
    pool_unlock(pool);
    if (num_slots) *num_slots = pool->num_slots;
    if (num_free) *num_free = free_now;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_state_slot_alloc(attnrt_state_pool_t *pool, int32_t *slot)
{
    static const char fn[] = "attnrt_state_slot_alloc";
    attnrt_clear_error();
    if (!pool || !slot) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, pool ? "slot" : "pool");
    pool_lock(pool);
    int32_t found = -1;
    for (size_t w = 0; w < ((size_t)pool->num_slots + 63) / 64 && found < 0; w++) {
        uint64_t free_bits = ~pool->used[w];
        if (!free_bits) continue;
        int64_t s = (int64_t)w * 64 + __builtin_ctzll(free_bits);
        if (s < pool->num_slots) found = (int32_t)s; /* bits past num_slots in the last word are never slots */
    }
    if (found >= 0) {
        pool->used[(uint32_t)found / 64u] |= (uint64_t)1 << ((uint32_t)found % 64u);
        pool->num_free--;
    }
    pool_unlock(pool);
    if (found < 0)
        return attnrt_fail(ATTNRT_ERR_OUT_OF_MEMORY, "%s: all %d slots of the pool are allocated; free one or make a "
                           "larger pool", fn, pool->num_slots);
    *slot = found;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_state_slot_free(attnrt_state_pool_t *pool, int32_t slot)
{
    static const char fn[] = "attnrt_state_slot_free";
    attnrt_clear_error();
    if (!pool) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: pool is NULL", fn);
    pool_lock(pool);
    attnrt_status_t st = check_slot_locked(fn, "slot", pool, slot);
    if (st == ATTNRT_OK) {
        pool->used[(uint32_t)slot / 64u] &= ~((uint64_t)1 << ((uint32_t)slot % 64u));
        pool->num_free++;
    }
    pool_unlock(pool);
    return st;
}

static attnrt_status_t check_stream(const char *fn, const attnrt_state_pool_t *pool, const attnrt_stream_t *stream)
{
    if (stream && stream->ctx != pool->ctx)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: stream belongs to another context (on %s) than the "
                           "pool's context (on %s); pass a stream created on the pool's context",
                           fn, stream->ctx->ref->name, pool->ctx->ref->name);
    return ATTNRT_OK;
}

static void *slot_address(const attnrt_state_pool_t *pool, int32_t slot)
{
    return (char *)pool->tensor.data + (size_t)slot * pool->slot_bytes;
}

attnrt_status_t attnrt_state_slot_zero(attnrt_state_pool_t *pool, int32_t slot, attnrt_stream_t *stream)
{
    static const char fn[] = "attnrt_state_slot_zero";
    attnrt_clear_error();
    if (!pool) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: pool is NULL", fn);
    TRY(attnrt_state_pool_check_slot(fn, "slot", pool, slot));
    TRY(check_stream(fn, pool, stream));
    return attnrt_context_mem_set(pool->ctx, slot_address(pool, slot), 0, pool->slot_bytes, stream, fn);
}

attnrt_status_t attnrt_state_slot_copy(attnrt_state_pool_t *pool, int32_t src, int32_t dst, attnrt_stream_t *stream)
{
    static const char fn[] = "attnrt_state_slot_copy";
    attnrt_clear_error();
    if (!pool) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: pool is NULL", fn);
    TRY(attnrt_state_pool_check_slot(fn, "src", pool, src));
    TRY(attnrt_state_pool_check_slot(fn, "dst", pool, dst));
    TRY(check_stream(fn, pool, stream));
    if (src == dst) return ATTNRT_OK;
    attnrt_context_t *ctx = pool->ctx;
    attnrt_status_t st = ctx->api->mem_copy(ctx->device, slot_address(pool, dst), slot_address(pool, src),
                                            pool->slot_bytes, ATTNRT_COPY_DEVICE_TO_DEVICE,
                                            stream ? stream->handle : NULL);
    return st == ATTNRT_OK ? st : attnrt_context_fail(ctx, st, fn);
}
