/* Input structs at the public boundary (struct_in.h). Every input struct is read by struct_read, the
 * one place that applies the struct_size rules of attnrt_types.h "Versioned structs":
 *
 *   - NULL: ATTNRT_ERR_INVALID_ARGUMENT, "<fn>: <arg> is NULL".
 *   - struct_size < sizeof(size_t): the struct cannot even hold its struct_size (0 is a struct nobody set
 *     up): refused. Above ATTNRT_STRUCT_IN_MAX: refused too (an uninitialised struct_size).
 *   - struct_size smaller than our sizeof: an older caller. Accepted; exactly struct_size bytes are read
 *     and the fields beyond them read as zero, which always means off / default. A required field that
 *     lies beyond them then fails as missing, the message saying that the struct ends before it. A size
 *     that ends inside a field gives that field its leading bytes only: struct_size is some version's
 *     sizeof, which always ends at a field's end.
 *   - struct_size larger than our sizeof: a newer caller. Accepted only when every byte past our sizeof
 *     is zero (the fields we do not know are at their default); a non-zero byte is refused, naming the
 *     struct and the byte, so a newer caller's option is never silently dropped.
 *
 * The caller's struct is read with memcpy only (it may be unaligned, and may end right at an unmapped
 * page); the copy gets struct_size = our sizeof, so plugins always see full-size structs the runtime
 * owns. Tensors are checked in place (attnrt_tensor_struct_check): all their fields are required. */
#include <stdio.h>
#include <string.h>

#include "struct_in.h"

/* A field the struct cannot do without, named when the caller's struct ends before it. */
typedef struct struct_in_field {
    const char *name;
    size_t      end;   /* the struct_size that first holds it */
    const char *zero;  /* how a missing value reads: "NULL" or "0" */
} struct_in_field_t;

typedef struct struct_in_type {
    const char              *name; /* "attnrt_attention_args_t" */
    const char              *init; /* "ATTNRT_ATTENTION_ARGS_INIT" */
    size_t                   size; /* our sizeof */
    const struct_in_field_t *required;
    size_t                   num_required;
} struct_in_type_t;

#define PTR(type, field) {#field, ATTNRT_STRUCT_SIZE(type, field), "NULL"}
#define NUM(type, field) {#field, ATTNRT_STRUCT_SIZE(type, field), "0"}

/* The first non-zero byte at or after `from` of the `size` bytes at p, or `size` when there is none. */
static size_t first_nonzero(const void *p, size_t from, size_t size)
{
    const unsigned char *b = p;
    for (size_t i = from; i < size; i++)
        if (b[i]) return i;
    return size;
}

/* The checks on struct_size every struct shares: `what` is how messages name the size ("args->struct_size",
 * "query.struct_size"). Reads at most `given` bytes of `in`. */
static attnrt_status_t check_size(const char *fn, const char *what, const void *in, size_t given, size_t min,
                                  size_t size, const char *type, const char *init)
{
    if (given < min)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s = %zu is too small (%s); set it to sizeof(%s) "
                           "(%s does)", fn, what, given,
                           min == sizeof(size_t) ? "it cannot even hold struct_size" : "every field of it is required",
                           type, init);
    if (given > ATTNRT_STRUCT_IN_MAX)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s = %zu is larger than any struct of this ABI (at most "
                           "%d bytes): is it set? set it to sizeof(%s) (%s does)", fn, what, given,
                           ATTNRT_STRUCT_IN_MAX, type, init);
    size_t at = first_nonzero(in, size, given);
    if (given > size && at < given)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s = %zu is larger than %s of this library (%zu bytes) "
                           "and its byte %zu is not zero: a field this library (ABI %d.%d) does not know is set; leave "
                           "it zero or use a libattnrt that knows it", fn, what, given, type, size, at,
                           ATTNRT_ABI_MAJOR, ATTNRT_ABI_MINOR);
    return ATTNRT_OK;
}

static attnrt_status_t struct_read(const char *fn, const char *arg, const struct_in_type_t *type, const void *in,
                                   void *out)
{
    if (!in) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, arg);
    size_t given;
    memcpy(&given, in, sizeof given);
    char what[96];
    snprintf(what, sizeof what, "%s->struct_size", arg);
    attnrt_status_t st = check_size(fn, what, in, given, sizeof(size_t), type->size, type->name, type->init);
    if (st != ATTNRT_OK) return st;
    memset(out, 0, type->size);
    memcpy(out, in, given < type->size ? given : type->size);
    memcpy(out, &type->size, sizeof type->size);
    for (size_t i = 0; i < type->num_required; i++) {
        const struct_in_field_t *f = &type->required[i];
        if (f->end > given)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s->%s is %s (%s %zu ends before it)", fn, arg,
                               f->name, f->zero, what, given);
    }
    return ATTNRT_OK;
}

attnrt_status_t attnrt_tensor_struct_check(const char *fn, const char *name, const attnrt_tensor_t *t)
{
    char what[96];
    snprintf(what, sizeof what, "%s.struct_size", name);
    return check_size(fn, what, t, t->struct_size, ATTNRT_TENSOR_STRUCT_SIZE, sizeof *t, "attnrt_tensor_t",
                      "attnrt_tensor_init");
}

/* One reader per input struct: its descriptor and the typed entry. */
#define STRUCT_IN_DEFINE(name, type, init_macro, ...)                                                           \
    static const struct_in_field_t name##_required[] = {__VA_ARGS__};                                           \
    static const struct_in_type_t name##_type = {#type, #init_macro, sizeof(type), name##_required,             \
                                                 sizeof name##_required / sizeof name##_required[0]};          \
    attnrt_status_t attnrt_##name##_in(const char *fn, const char *arg, const type *in, type *out)             \
    {                                                                                                           \
        return struct_read(fn, arg, &name##_type, in, out);                                                     \
    }

/* For a struct with no required field: an entry every struct_size holds (end 0), so it never fails. */
#define NONE {"", 0, ""}

STRUCT_IN_DEFINE(attention_args, attnrt_attention_args_t, ATTNRT_ATTENTION_ARGS_INIT,
                 PTR(attnrt_attention_args_t, query), PTR(attnrt_attention_args_t, key_cache),
                 PTR(attnrt_attention_args_t, value_cache), PTR(attnrt_attention_args_t, block_table),
                 PTR(attnrt_attention_args_t, query_start_loc), PTR(attnrt_attention_args_t, seq_lens),
                 PTR(attnrt_attention_args_t, out))
STRUCT_IN_DEFINE(batch_host, attnrt_batch_host_t, ATTNRT_BATCH_HOST_INIT,
                 PTR(attnrt_batch_host_t, query_start_loc))
STRUCT_IN_DEFINE(cascade_args, attnrt_cascade_args_t, ATTNRT_CASCADE_ARGS_INIT,
                 PTR(attnrt_cascade_args_t, suffix), PTR(attnrt_cascade_args_t, prefix_block_table),
                 PTR(attnrt_cascade_args_t, prefix_seq_lens))
STRUCT_IN_DEFINE(cascade_host, attnrt_cascade_host_t, ATTNRT_CASCADE_HOST_INIT,
                 PTR(attnrt_cascade_host_t, prefix), PTR(attnrt_cascade_host_t, suffix))
STRUCT_IN_DEFINE(kv_write_args, attnrt_kv_write_args_t, ATTNRT_KV_WRITE_ARGS_INIT,
                 PTR(attnrt_kv_write_args_t, key), PTR(attnrt_kv_write_args_t, value),
                 PTR(attnrt_kv_write_args_t, slot_mapping), PTR(attnrt_kv_write_args_t, key_cache),
                 PTR(attnrt_kv_write_args_t, value_cache))
STRUCT_IN_DEFINE(merge_args, attnrt_merge_args_t, ATTNRT_MERGE_ARGS_INIT,
                 NUM(attnrt_merge_args_t, num_states), PTR(attnrt_merge_args_t, states),
                 PTR(attnrt_merge_args_t, lses), PTR(attnrt_merge_args_t, out))
STRUCT_IN_DEFINE(mla_args, attnrt_mla_args_t, ATTNRT_MLA_ARGS_INIT,
                 PTR(attnrt_mla_args_t, query), PTR(attnrt_mla_args_t, kv_cache), PTR(attnrt_mla_args_t, block_table),
                 PTR(attnrt_mla_args_t, query_start_loc), PTR(attnrt_mla_args_t, seq_lens),
                 PTR(attnrt_mla_args_t, out), NUM(attnrt_mla_args_t, scale))
STRUCT_IN_DEFINE(lightning_args, attnrt_lightning_args_t, ATTNRT_LIGHTNING_ARGS_INIT,
                 PTR(attnrt_lightning_args_t, query), PTR(attnrt_lightning_args_t, key),
                 PTR(attnrt_lightning_args_t, value), PTR(attnrt_lightning_args_t, out),
                 PTR(attnrt_lightning_args_t, slopes), PTR(attnrt_lightning_args_t, state),
                 PTR(attnrt_lightning_args_t, query_start_loc), PTR(attnrt_lightning_args_t, state_indices),
                 PTR(attnrt_lightning_args_t, has_initial_state))
STRUCT_IN_DEFINE(gated_delta_args, attnrt_gated_delta_args_t, ATTNRT_GATED_DELTA_ARGS_INIT,
                 PTR(attnrt_gated_delta_args_t, query), PTR(attnrt_gated_delta_args_t, key),
                 PTR(attnrt_gated_delta_args_t, value), PTR(attnrt_gated_delta_args_t, g),
                 PTR(attnrt_gated_delta_args_t, beta), PTR(attnrt_gated_delta_args_t, out),
                 PTR(attnrt_gated_delta_args_t, state), PTR(attnrt_gated_delta_args_t, query_start_loc),
                 PTR(attnrt_gated_delta_args_t, has_initial_state))
STRUCT_IN_DEFINE(state_host, attnrt_state_host_t, ATTNRT_STATE_HOST_INIT,
                 PTR(attnrt_state_host_t, has_initial_state))
STRUCT_IN_DEFINE(op_query, attnrt_op_query_t, ATTNRT_OP_QUERY_INIT, NUM(attnrt_op_query_t, op))
STRUCT_IN_DEFINE(attention_config, attnrt_attention_config_t, ATTNRT_ATTENTION_CONFIG_INIT, NONE)
STRUCT_IN_DEFINE(capacity, attnrt_capacity_t, ATTNRT_CAPACITY_INIT, NONE)
