/*
 * attnrt.h — libattnrt's public API: one device-neutral API for the attention family of ops.
 *
 * Conventions: every function returns attnrt_status_t (0 = ATTNRT_OK, errors negative) and writes its
 * results through pointer parameters; on failure nothing is written and attnrt_last_error() holds a
 * message naming the argument and the bad value. Structs the caller fills or passes start with
 * struct_size (use the ATTNRT_*_INIT macros); fields are only ever appended, a struct of an older,
 * smaller struct_size is read with its missing fields as zero, and zero always means off / default
 * (attnrt_types.h). Structs and tensors are borrowed for the call only.
 *
 * Streams: every call that takes an attnrt_stream_t orders its work on it and returns without waiting
 * for it; a NULL stream is the context's default stream, on which the work is complete when the call
 * returns. An engine's own stream (CUstream, ...) becomes an attnrt_stream_t with attnrt_stream_wrap.
 *
 * Device memory: a tensor's data is an address in the context's device memory: from attnrt_mem_alloc
 * or from the engine's own allocator on the same device (torch's data_ptr(), a DLPack tensor:
 * attnrt_dlpack.h). Spans inside attnrt_mem_alloc allocations are checked against them; other
 * addresses are the caller's to get right.
 *
 * Shut-down: attnrt_close every context, then attnrt_shutdown() unloads the plugins and frees the
 * registry (leak checkers then report nothing).
 *
 * Start-up: the first call of any function below discovers and loads plugins (see docs/abi.md for the
 * order: ATTNRT_PLUGIN, ATTNRT_PLUGIN_PATH, the install directory, the build tree). attnrt_init() does it
 * explicitly; it is thread-safe and runs once until attnrt_shutdown().
 */
#ifndef ATTNRT_H
#define ATTNRT_H

#include "attnrt_types.h" /* status codes, dtypes, tensors, argument structs (no plugin vtable) */

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define ATTNRT_API __declspec(dllexport)
#else
#define ATTNRT_API __attribute__((visibility("default")))
#endif

#define ATTNRT_VERSION_MAJOR 0
#define ATTNRT_VERSION_MINOR 2
#define ATTNRT_VERSION_PATCH 0

/* ---- version, status, errors ----------------------------------------------------------------- */

/* The library's version (not the ABI's); any pointer may be NULL. */
ATTNRT_API void attnrt_version(int *major, int *minor, int *patch);
/* The plugin ABI this library speaks (ATTNRT_ABI_MAJOR/MINOR as it was built); any pointer may be NULL. */
ATTNRT_API void attnrt_abi_version(uint32_t *major, uint32_t *minor);
/* "0.1.0 (plugin ABI 1.3)": the library's and the ABI's versions; static. */
ATTNRT_API const char *attnrt_version_string(void);
/* "ATTNRT_ERR_INVALID_ARGUMENT"; static; "ATTNRT_ERR_UNKNOWN" for a value that is not a status. */
ATTNRT_API const char *attnrt_status_name(attnrt_status_t status);
/* The calling thread's message for its last failed call; "" if none. Valid until this thread's next
 * libattnrt call. */
ATTNRT_API const char *attnrt_last_error(void);

/* ---- logging ------------------------------------------------------------------------------------ */

/* An engine's log sink: one line (no prefix, no newline) and its level (enum attnrt_log_level). The line is valid only
 * during the call. Called from whichever thread logs, possibly from several at once, so it must be thread-safe. */
typedef void (*attnrt_log_fn)(uint32_t level, const char *line, void *user_data);
/* Sends the library's and its plugins' log lines to `fn` instead of stderr; NULL restores stderr. `user_data` is
 * borrowed until the sink is replaced (a call already under way when it is replaced may still finish). Thread-safe. */
ATTNRT_API attnrt_status_t attnrt_log_set_callback(attnrt_log_fn fn, void *user_data);
/* Drops lines above `level` (enum attnrt_log_level; the default is ATTNRT_LOG's, else ATTNRT_LOG_WARN). */
ATTNRT_API attnrt_status_t attnrt_log_set_level(uint32_t level);

/* ---- start-up and shut-down ------------------------------------------------------------------ */

/* Discovers and loads plugins once. Returns ATTNRT_OK even when some plugins failed in auto mode
 * (their reasons are in attnrt_plugin_get_info); fails when ATTNRT_PLUGIN names a plugin that cannot be
 * loaded, with the reason in attnrt_last_error(). Later calls return the first call's status. */
ATTNRT_API attnrt_status_t attnrt_init(void);
/* Shuts every plugin down and unloads it, so a later call starts afresh (and re-reads the environment).
 * ATTNRT_ERR_BUSY while any context is open. */
ATTNRT_API attnrt_status_t attnrt_shutdown(void);

/* ---- plugins --------------------------------------------------------------------------------- */

typedef struct attnrt_plugin_info {
    size_t          struct_size;
    const char     *path;        /* the file tried; runtime-owned, valid until attnrt_shutdown        */
    const char     *name;        /* plugin's name, or the file's stem when it never answered         */
    const char     *version;     /* plugin's own version; "" when not loaded far enough to know      */
    uint32_t        abi_major;   /* the ABI the plugin was built for; 0 when unknown                  */
    uint32_t        abi_minor;
    attnrt_status_t status;      /* ATTNRT_OK when loaded and usable, else why not                    */
    const char     *reason;      /* "" when loaded; else one actionable line. Runtime-owned as path  */
    uint32_t        device_count;/* devices this plugin contributes                                   */
} attnrt_plugin_info_t;
#define ATTNRT_PLUGIN_INFO_INIT {sizeof(attnrt_plugin_info_t), 0, 0, 0, 0, 0, ATTNRT_OK, 0, 0}
#define ATTNRT_PLUGIN_INFO_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_plugin_info_t, device_count)
ATTNRT_CHECK_LAST_FIELD(attnrt_plugin_info_t, device_count);

/* Every plugin file tried, loaded or not, in discovery order. */
ATTNRT_API attnrt_status_t attnrt_plugin_count(uint32_t *count);
ATTNRT_API attnrt_status_t attnrt_plugin_get_info(uint32_t index, attnrt_plugin_info_t *info);

/* ---- devices (across all loaded plugins) ----------------------------------------------------- */

ATTNRT_API attnrt_status_t attnrt_device_count(uint32_t *count);
/* props->struct_size must be set by the caller. */
ATTNRT_API attnrt_status_t attnrt_device_get_properties(uint32_t index, attnrt_device_properties_t *props);
/* Attribute i < props.attribute_count; attr->struct_size must be set by the caller. */
ATTNRT_API attnrt_status_t attnrt_device_get_attribute(uint32_t index, uint32_t i, attnrt_device_attribute_t *attr);
/* Index into attnrt_plugin_get_info of the plugin that owns device `index`. */
ATTNRT_API attnrt_status_t attnrt_device_get_plugin(uint32_t index, uint32_t *plugin_index);
/* Finds a device by its name ("cpu:0"); ATTNRT_ERR_NOT_FOUND lists the names there are. */
ATTNRT_API attnrt_status_t attnrt_device_find(const char *name, uint32_t *index);
/* The device attnrt_open(NULL) would use: ATTNRT_DEVICE if set, else the first GPU, else the CPU,
 * else any other (simulators are opt-in). */
ATTNRT_API attnrt_status_t attnrt_device_default(uint32_t *index);

/* ---- contexts -------------------------------------------------------------------------------- */

typedef struct attnrt_context attnrt_context_t;
typedef struct attnrt_stream  attnrt_stream_t;
typedef struct attnrt_event   attnrt_event_t;

/* Opens a context on a device by name ("cuda:0"); NULL or "" picks attnrt_device_default().
 * *ctx is caller-owned until attnrt_close. Thread-safe. */
ATTNRT_API attnrt_status_t attnrt_open(const char *device, attnrt_context_t **ctx);
/* Closes it. ATTNRT_ERR_BUSY (and the context stays open) while allocations, streams or events made
 * on it are still live: the message counts them. NULL is a no-op. */
ATTNRT_API attnrt_status_t attnrt_close(attnrt_context_t *ctx);
/* "cpu:0"; valid while the context is open. */
ATTNRT_API const char *attnrt_context_device_name(const attnrt_context_t *ctx);

/* ---- memory (device pointers are opaque addresses; host pointers are borrowed for the call) ---- */

ATTNRT_API attnrt_status_t attnrt_mem_alloc(attnrt_context_t *ctx, size_t bytes, void **ptr);
ATTNRT_API attnrt_status_t attnrt_mem_free(attnrt_context_t *ctx, void *ptr);
/* Copies are ordered on `stream`; NULL = the default stream, complete when the call returns. */
ATTNRT_API attnrt_status_t attnrt_mem_copy_to_device(attnrt_context_t *ctx, void *dst, const void *src, size_t bytes, attnrt_stream_t *stream);
ATTNRT_API attnrt_status_t attnrt_mem_copy_to_host(attnrt_context_t *ctx, void *dst, const void *src, size_t bytes, attnrt_stream_t *stream);
ATTNRT_API attnrt_status_t attnrt_mem_copy_on_device(attnrt_context_t *ctx, void *dst, const void *src, size_t bytes, attnrt_stream_t *stream);
ATTNRT_API attnrt_status_t attnrt_mem_set(attnrt_context_t *ctx, void *dst, int value, size_t bytes, attnrt_stream_t *stream);

/* ---- streams and events ---------------------------------------------------------------------- */

ATTNRT_API attnrt_status_t attnrt_stream_create(attnrt_context_t *ctx, attnrt_stream_t **stream);
ATTNRT_API attnrt_status_t attnrt_stream_destroy(attnrt_stream_t *stream);
/* NULL stream: the context's default stream. */
ATTNRT_API attnrt_status_t attnrt_stream_synchronize(attnrt_context_t *ctx, attnrt_stream_t *stream);
/* ATTNRT_ERR_UNSUPPORTED where the plugin has no events. */
ATTNRT_API attnrt_status_t attnrt_event_create(attnrt_context_t *ctx, attnrt_event_t **event);
ATTNRT_API attnrt_status_t attnrt_event_destroy(attnrt_event_t *event);
ATTNRT_API attnrt_status_t attnrt_event_record(attnrt_event_t *event, attnrt_stream_t *stream);
ATTNRT_API attnrt_status_t attnrt_event_elapsed_ms(attnrt_event_t *start, attnrt_event_t *end, float *ms);
/* Blocks the calling thread until the work recorded before `event` is done. */
ATTNRT_API attnrt_status_t attnrt_event_synchronize(attnrt_event_t *event);

/* An engine's own stream as an attnrt_stream_t, without taking ownership: `native` is the device API's
 * stream (a CUstream on cuda: torch.cuda.current_stream().cuda_stream, cudaStream_t is the same
 * handle). Work on it is queued like on a created stream, never waited for by the host, and may be
 * captured in a graph the engine is capturing on that stream. attnrt_stream_destroy frees the wrapper
 * only; the native stream must outlive it. ATTNRT_ERR_UNSUPPORTED on devices without native streams
 * (cpu, npu_sim: their work completes within each call). */
ATTNRT_API attnrt_status_t attnrt_stream_wrap(attnrt_context_t *ctx, void *native, attnrt_stream_t **stream);
/* The native handle of a created or wrapped stream (NULL stream: the default stream's). */
ATTNRT_API attnrt_status_t attnrt_stream_native(attnrt_context_t *ctx, attnrt_stream_t *stream, void **native);
/* Later work on `stream` (NULL: the default stream) waits for `event` (recorded on any stream of the
 * context, or wrapped from the engine) without blocking the host. */
ATTNRT_API attnrt_status_t attnrt_stream_wait_event(attnrt_stream_t *stream, attnrt_event_t *event);
/* A native event (CUevent on cuda) as an attnrt_event_t, without taking ownership (attnrt_event_destroy
 * frees the wrapper only), so libattnrt work can wait on the engine's events and record into them. */
ATTNRT_API attnrt_status_t attnrt_event_wrap(attnrt_context_t *ctx, void *native, attnrt_event_t **event);
/* The native handle of a created or wrapped event, for the engine to wait on. */
ATTNRT_API attnrt_status_t attnrt_event_native(attnrt_event_t *event, void **native);

/* ---- capabilities ---------------------------------------------------------------------------- */

/* ATTNRT_OK when the context's device supports the combination; ATTNRT_ERR_UNSUPPORTED with the
 * plugin's reason copied into `reason` (caller-owned; may be NULL) and into attnrt_last_error(). */
ATTNRT_API attnrt_status_t attnrt_op_supported(attnrt_context_t *ctx, const attnrt_op_query_t *query, char *reason, size_t reason_cap);
/* Same question for a device index, without opening a context (for tools such as attnrt-info). */
ATTNRT_API attnrt_status_t attnrt_device_op_supported(uint32_t device, const attnrt_op_query_t *query, char *reason, size_t reason_cap);
/* "paged_attention"; static; "unknown" otherwise. */
ATTNRT_API const char *attnrt_op_name(uint32_t op);

/* ---- tensors ------------------------------------------------------------------------------------ */

/* Fills *t as a contiguous row-major tensor over `data` (borrowed). ndim in 1..ATTNRT_MAX_DIMS. */
ATTNRT_API attnrt_status_t attnrt_tensor_init(attnrt_tensor_t *t, void *data, attnrt_dtype_t dtype, int32_t ndim,
                                              const int64_t *shape);
/* Bytes per element (0 for a dtype libattnrt does not know). */
ATTNRT_API size_t attnrt_dtype_size(attnrt_dtype_t dtype);
/* "f32", "f16", "bf16", "fp8_e4m3", "fp8_e5m2", "i32", "i64", "bool", "u8"; "unknown" otherwise. Static. */
ATTNRT_API const char *attnrt_dtype_name(attnrt_dtype_t dtype);

/* ---- KV write ----------------------------------------------------------------------------------- */

/* Writes key/value rows into the paged caches at slot_mapping (negative slots skipped). */
ATTNRT_API attnrt_status_t attnrt_kv_write(attnrt_context_t *ctx, const attnrt_kv_write_args_t *args,
                                           attnrt_stream_t *stream);

/* ---- paged attention: plan once per step, run per layer --------------------------------------- */

typedef struct attnrt_plan attnrt_plan_t;

/* Validates the batch (every shape, dtype, stride and, from `batch` on the host, every index), asks the
 * device whether it supports the combination, and sizes the workspace. `args` tensors may have NULL
 * data here. *plan is caller-owned until attnrt_plan_destroy; it may be reused by every layer whose
 * args have the same shapes, dtypes and options. */
ATTNRT_API attnrt_status_t attnrt_attention_plan(attnrt_context_t *ctx, const attnrt_attention_args_t *args,
                                                 const attnrt_batch_host_t *batch, attnrt_plan_t **plan);
/* Workspace bytes the plan's run (attention, cascade, MLA, lightning, gated delta) needs (may be 0). */
ATTNRT_API attnrt_status_t attnrt_plan_workspace_size(const attnrt_plan_t *plan, size_t *bytes);
ATTNRT_API attnrt_status_t attnrt_plan_destroy(attnrt_plan_t *plan);
/* Runs a planned batch: no allocation, no host synchronisation, no host reads of device data.
 * `workspace` is device memory of at least attnrt_plan_workspace_size bytes (NULL when that is 0). */
ATTNRT_API attnrt_status_t attnrt_attention_run(attnrt_plan_t *plan, const attnrt_attention_args_t *args,
                                                void *workspace, size_t workspace_bytes, attnrt_stream_t *stream);

/* Capacity plans, for graphs replayed across batches: plans paged attention once for every batch within
 * `capacity` (args' tensors have the capacity shapes: query / out [max_tokens, Hq, D], block_table
 * [max_seqs, max_blocks_per_seq], query_start_loc [max_seqs + 1], seq_lens [max_seqs]; data may be NULL).
 * The workspace size covers every such batch. Each step, attnrt_plan_update gives it the step's batch;
 * runs then take args of the capacity shapes (the same tensors a graph captured), compute the first
 * batch.num_seqs requests and leave the rows past query_start_loc[num_seqs] unwritten. The engine keeps
 * the device tensors' entries past num_seqs consistent (query_start_loc repeating its last value,
 * seq_lens 0), as vLLM pads them. */
ATTNRT_API attnrt_status_t attnrt_attention_plan_capacity(attnrt_context_t *ctx, const attnrt_attention_args_t *args,
                                                          const attnrt_capacity_t *capacity, attnrt_plan_t **plan);
/* Gives a capacity plan the step's batch (host metadata, checked against the capacity and borrowed for
 * the call). Device metadata is written into the plan's own buffers in order on `stream`, so work queued
 * after it (a graph replay included) runs the new batch and work queued before it the old one. */
ATTNRT_API attnrt_status_t attnrt_plan_update(attnrt_plan_t *plan, const attnrt_batch_host_t *batch,
                                              attnrt_stream_t *stream);

/* ---- merging partial states --------------------------------------------------------------------- */

ATTNRT_API attnrt_status_t attnrt_merge_states(attnrt_context_t *ctx, const attnrt_merge_args_t *args,
                                               attnrt_stream_t *stream);

/* ---- cascade (shared-prefix) attention ---------------------------------------------------------- */

/* Every query attends, without a mask, to its request's prefix (prefix_block_table / prefix_seq_lens;
 * give dim-0 stride 0 to share one prefix) and, as `suffix` says (causal or not), to its own tokens,
 * whose positions count from the end of the prefix. The runtime composes it from two attention runs
 * and a merge; sinks in `suffix` are applied once, after the merge. ALiBi and sliding windows are
 * refused here (their positions would need the prefix offset inside the kernel). */
typedef struct attnrt_cascade_args {
    size_t                         struct_size;
    const attnrt_attention_args_t *suffix;             /* query, caches, out, lse, ... as usual     */
    const attnrt_tensor_t         *prefix_block_table; /* [B, max_prefix_blocks] int32, same caches */
    const attnrt_tensor_t         *prefix_seq_lens;    /* [B] int32                                 */
} attnrt_cascade_args_t;
#define ATTNRT_CASCADE_ARGS_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_cascade_args_t, prefix_seq_lens)
ATTNRT_CHECK_LAST_FIELD(attnrt_cascade_args_t, prefix_seq_lens);
#define ATTNRT_CASCADE_ARGS_INIT ATTNRT_STRUCT_INIT(attnrt_cascade_args_t)

/* Host metadata of both parts; prefix->query_start_loc is not read (the suffix's is used). */
typedef struct attnrt_cascade_host {
    size_t                     struct_size;
    const attnrt_batch_host_t *prefix;
    const attnrt_batch_host_t *suffix;
} attnrt_cascade_host_t;
#define ATTNRT_CASCADE_HOST_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_cascade_host_t, suffix)
ATTNRT_CHECK_LAST_FIELD(attnrt_cascade_host_t, suffix);
#define ATTNRT_CASCADE_HOST_INIT ATTNRT_STRUCT_INIT(attnrt_cascade_host_t)

ATTNRT_API attnrt_status_t attnrt_cascade_plan(attnrt_context_t *ctx, const attnrt_cascade_args_t *args,
                                               const attnrt_cascade_host_t *host, attnrt_plan_t **plan);
ATTNRT_API attnrt_status_t attnrt_cascade_run(attnrt_plan_t *plan, const attnrt_cascade_args_t *args,
                                              void *workspace, size_t workspace_bytes, attnrt_stream_t *stream);

/* ---- device options, kernel selection, op counters (ABI 1.2) ---------------------------------- */

/* attnrt_open with key/value options for the device (e.g. {"profile", "rbln-rebel100"} on npu_sim);
 * options are borrowed for the call. A plugin refuses keys it does not know, naming them. */
ATTNRT_API attnrt_status_t attnrt_open_with_options(const char *device, const attnrt_device_attribute_t *options,
                                                    uint32_t num_options, attnrt_context_t **ctx);
/* Which kernel and partitioning the device would use for a model configuration, or which of its rules
 * refuses it (ATTNRT_ERR_UNSUPPORTED / INVALID_ARGUMENT, the device's wording in attnrt_last_error()).
 * Devices without such rules answer kernel "paged" with the configured block size. */
ATTNRT_API attnrt_status_t attnrt_select_attention(attnrt_context_t *ctx, const attnrt_attention_config_t *config,
                                                   attnrt_attention_selection_t *selection);
/* Counters of the last op run on the context's device (time, bytes, FLOPs, partitions, padding); the
 * simulated NPU fills them from its cost model. ATTNRT_ERR_UNSUPPORTED where a plugin keeps none. */
ATTNRT_API attnrt_status_t attnrt_last_op_stats(attnrt_context_t *ctx, attnrt_op_stats_t *stats);

/* ---- state-slot pools (linear attention, GDN, and any per-request recurrent state) ------------ */

typedef struct attnrt_state_pool attnrt_state_pool_t;

/* A pool of num_slots states of shape slot_shape (e.g. [H, Dk, Dv]) and dtype in device memory, all
 * slots free. *pool is caller-owned until attnrt_state_pool_destroy (before attnrt_close). */
ATTNRT_API attnrt_status_t attnrt_state_pool_create(attnrt_context_t *ctx, attnrt_dtype_t dtype, int32_t slot_ndim,
                                                    const int64_t *slot_shape, int32_t num_slots,
                                                    attnrt_state_pool_t **pool);
ATTNRT_API attnrt_status_t attnrt_state_pool_destroy(attnrt_state_pool_t *pool);
/* The pool as a tensor [num_slots, slot_shape...] to pass as an op's `state`. */
ATTNRT_API attnrt_status_t attnrt_state_pool_tensor(const attnrt_state_pool_t *pool, attnrt_tensor_t *tensor);
/* Number of slots and how many are free; either pointer may be NULL. */
ATTNRT_API attnrt_status_t attnrt_state_pool_usage(const attnrt_state_pool_t *pool, int32_t *num_slots,
                                                   int32_t *num_free);
/* Takes the lowest free slot id (ATTNRT_ERR_OUT_OF_MEMORY when none is free). Its contents are
 * undefined until written: zero it, copy into it, or run an op with has_initial_state = 0. */
ATTNRT_API attnrt_status_t attnrt_state_slot_alloc(attnrt_state_pool_t *pool, int32_t *slot);
/* Returns a slot to the pool; freeing a free or out-of-range slot is an error naming it. */
ATTNRT_API attnrt_status_t attnrt_state_slot_free(attnrt_state_pool_t *pool, int32_t slot);
ATTNRT_API attnrt_status_t attnrt_state_slot_zero(attnrt_state_pool_t *pool, int32_t slot, attnrt_stream_t *stream);
/* dst = src (prefix caching, speculative decoding, beam forks); both must be allocated. */
ATTNRT_API attnrt_status_t attnrt_state_slot_copy(attnrt_state_pool_t *pool, int32_t src, int32_t dst,
                                                  attnrt_stream_t *stream);

/* ---- MLA, lightning and gated delta: plan once per step, run per layer ------------------------ */

/* MLA (dense or sparse). Plans are destroyed with attnrt_plan_destroy. */
ATTNRT_API attnrt_status_t attnrt_mla_plan(attnrt_context_t *ctx, const attnrt_mla_args_t *args,
                                           const attnrt_batch_host_t *batch, attnrt_plan_t **plan);
ATTNRT_API attnrt_status_t attnrt_mla_run(attnrt_plan_t *plan, const attnrt_mla_args_t *args, void *workspace,
                                          size_t workspace_bytes, attnrt_stream_t *stream);
/* Lightning attention. `batch` gives query_start_loc (num_seqs, query_start_loc; block_table unused);
 * `states` the host state metadata; every state index must be -1 or a slot allocated in `pool`, and
 * two requests may not share a slot. At plan time args->state must be exactly the pool's tensor
 * (attnrt_state_pool_tensor); runs may pass another pool of the same layout (one pool per layer, the
 * same slot ids allocated in each). Slots must stay allocated until the runs complete. */
ATTNRT_API attnrt_status_t attnrt_lightning_plan(attnrt_context_t *ctx, const attnrt_lightning_args_t *args,
                                                 const attnrt_batch_host_t *batch, const attnrt_state_host_t *states,
                                                 const attnrt_state_pool_t *pool, attnrt_plan_t **plan);
ATTNRT_API attnrt_status_t attnrt_lightning_run(attnrt_plan_t *plan, const attnrt_lightning_args_t *args,
                                                void *workspace, size_t workspace_bytes, attnrt_stream_t *stream);
/* Gated delta rule, likewise (spec decoding through states->spec_state_indices / num_accepted). */
ATTNRT_API attnrt_status_t attnrt_gated_delta_plan(attnrt_context_t *ctx, const attnrt_gated_delta_args_t *args,
                                                   const attnrt_batch_host_t *batch, const attnrt_state_host_t *states,
                                                   const attnrt_state_pool_t *pool, attnrt_plan_t **plan);
ATTNRT_API attnrt_status_t attnrt_gated_delta_run(attnrt_plan_t *plan, const attnrt_gated_delta_args_t *args,
                                                  void *workspace, size_t workspace_bytes, attnrt_stream_t *stream);

#ifdef __cplusplus
}
#endif

#endif /* ATTNRT_H */
