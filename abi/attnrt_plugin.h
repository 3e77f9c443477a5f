/*
 * attnrt_plugin.h — the libattnrt plugin ABI. The ONE header a plugin vendor needs.
 *
 * Versioning
 * ----------
 * ATTNRT_ABI_MAJOR changes only when an existing field or entry changes meaning, type or position;
 * plugins of another major are refused at load with a message naming the file and both versions.
 * ATTNRT_ABI_MINOR grows when fields or entries are APPENDED to a struct or to the vtable. The vtable
 * starts with `struct_size` like every struct (attnrt_types.h "Versioned structs"): a plugin built
 * against 2.0 loads in a 2.n runtime (the newer entries read as NULL -> "unsupported"), and a 2.n plugin
 * loads in a 2.0 runtime (the runtime ignores the entries it does not know).
 *
 * The runtime hands plugins full-size copies of every argument struct it checked, whatever struct_size
 * the engine compiled with; a plugin still reads them through its own sizeof (plugin_struct.h in the
 * tree does it), since a newer runtime's structs may be larger.
 *
 * History
 *   2.0  attnrt_types.h split out (engines need not see this vtable); paged attention's windows are
 *        sliding_window_left / _right, 0 = unlimited (1.x's window_left = 0 meant "no keys to the left",
 *        so a zero-filled struct computed something else); every input struct zero = default, with an
 *        ATTNRT_*_INIT macro; entries: native streams and events (stream_wrap, stream_native,
 *        stream_wait_event, event_wrap, event_native, event_synchronize) and capacity plans
 *        (attention_plan_capacity, attention_plan_update).
 *   1.x  (refused since 2.0) 1.0 devices, memory, streams, events, capability query; 1.1 tensors,
 *        kv_write, paged attention, merge; 1.2 MLA, lightning, gated delta, device options, kernel
 *        selection, op counters; 1.3 attention_config.model_kind.
 *
 * Ownership
 * ---------
 * Every pointer field and parameter says who owns it and how long it lives. Strings a plugin returns
 * are copied by the runtime before the next call into the plugin; a plugin never frees what the
 * runtime owns and vice versa. Every allocation has a matching free in the same vtable.
 *
 * Threads
 * -------
 * Entries may be called from any thread. Calls on distinct devices or streams may run concurrently;
 * the runtime serialises nothing on the dispatch path (no locks per call).
 */
#ifndef ATTNRT_PLUGIN_H
#define ATTNRT_PLUGIN_H

#include "attnrt_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------- */
/* Host services handed to the plugin at init.                                                      */
/* ---------------------------------------------------------------------------------------------- */

typedef struct attnrt_host_api {
    size_t   struct_size;
    uint32_t abi_major;  /* the runtime's ABI */
    uint32_t abi_minor;
    uint32_t log_level;  /* enum attnrt_log_level: messages above it are dropped by `log` anyway */
    /* Emits one line through the runtime's logger (ATTNRT_LOG). `msg` is borrowed for the call. */
    void (*log)(uint32_t level, const char *plugin_name, const char *msg);
} attnrt_host_api_t;
#define ATTNRT_HOST_API_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_host_api_t, log)
ATTNRT_CHECK_LAST_FIELD(attnrt_host_api_t, log);

/* ---------------------------------------------------------------------------------------------- */
/* The plugin vtable. One per plugin, static, returned by the entry symbol.                        */
/*                                                                                                  */
/* Handles: `void *plugin` is what init returned (lives until shutdown); `void *device` is what     */
/* device_open returned (lives until device_close); `void *stream` / `void *event` likewise. A NULL */
/* stream means the device's default stream, on which every call completes before it returns.      */
/* Device pointers are opaque addresses the plugin gave out from mem_alloc.                         */
/* ---------------------------------------------------------------------------------------------- */
enum attnrt_copy_kind {
    ATTNRT_COPY_HOST_TO_DEVICE   = 1,
    ATTNRT_COPY_DEVICE_TO_HOST   = 2,
    ATTNRT_COPY_DEVICE_TO_DEVICE = 3,
};

typedef struct attnrt_plugin_api attnrt_plugin_api_t;
struct attnrt_plugin_api {
    size_t      struct_size;   /* ATTNRT_PLUGIN_API_STRUCT_SIZE as the plugin compiled it         */
    uint32_t    abi_major;     /* ATTNRT_ABI_MAJOR the plugin was built against                    */
    uint32_t    abi_minor;     /* ATTNRT_ABI_MINOR the plugin was built against                    */
    const char *name;          /* short lowercase name, e.g. "cpu"; static, plugin-owned           */
    const char *version;       /* plugin's own version, e.g. "0.1.0"; static, plugin-owned         */

    /* --- lifecycle ----------------------------------------------------------------------------- */
    /* (required) Cheap check that the driver/hardware is there, before any heavy init. On failure
     * the reason is in last_error ("no CUDA driver: libcuda.so.1 not found"). */
    attnrt_status_t (*probe)(void);
    /* (required) Heavy init. `host` is borrowed and lives until shutdown. *plugin is plugin-owned. */
    attnrt_status_t (*init)(const attnrt_host_api_t *host, void **plugin);
    /* (required) Frees everything init made. Called once, after every device is closed. */
    void (*shutdown)(void *plugin);
    /* (required) Copies the calling thread's message for the last failed call into buf (NUL-terminated,
     * truncated to cap) and returns the full length. "" when there is none. */
    size_t (*last_error)(char *buf, size_t cap);

    /* --- devices ------------------------------------------------------------------------------- */
    /* (required) Number of devices; 0 is legal. */
    attnrt_status_t (*device_count)(void *plugin, uint32_t *count);
    /* (required) Fills *props (caller-owned; caller set props->struct_size). */
    attnrt_status_t (*device_properties)(void *plugin, uint32_t index, attnrt_device_properties_t *props);
    /* (optional; NULL: the device has no attributes) Fills attribute i < props.attribute_count. */
    attnrt_status_t (*device_attribute)(void *plugin, uint32_t index, uint32_t i, attnrt_device_attribute_t *attr);
    /* (required) Opens device `index` for use; *device is plugin-owned until device_close. */
    attnrt_status_t (*device_open)(void *plugin, uint32_t index, void **device);
    /* (required) Closes it; everything allocated on it must already be freed by the caller. */
    void (*device_close)(void *device);

    /* --- memory -------------------------------------------------------------------------------- */
    /* (required) Allocates `bytes` (> 0) of device memory, 256-byte aligned; *ptr owned by caller
     * until mem_free. Returns ATTNRT_ERR_OUT_OF_MEMORY when the device cannot. */
    attnrt_status_t (*mem_alloc)(void *device, size_t bytes, void **ptr);
    /* (required) Frees a pointer from mem_alloc; NULL is a no-op. */
    void (*mem_free)(void *device, void *ptr);
    /* (required) Copies `bytes` in the direction `kind` (enum attnrt_copy_kind), ordered on `stream`.
     * Host pointers are borrowed until the copy completes (stream synchronize). */
    attnrt_status_t (*mem_copy)(void *device, void *dst, const void *src, size_t bytes, uint32_t kind, void *stream);
    /* (optional; NULL: the runtime copies zeroed/filled host memory with mem_copy) Sets bytes. */
    attnrt_status_t (*mem_set)(void *device, void *dst, int value, size_t bytes, void *stream);

    /* --- streams and events -------------------------------------------------------------------- */
    /* (required) *stream is plugin-owned until stream_destroy. */
    attnrt_status_t (*stream_create)(void *device, void **stream);
    /* (required) Waits for the stream's work, then destroys it. */
    void (*stream_destroy)(void *device, void *stream);
    /* (required) Blocks until all work queued on `stream` (NULL: default stream) is done. */
    attnrt_status_t (*stream_synchronize)(void *device, void *stream);
    /* (optional; NULL: timing unsupported) *event is plugin-owned until event_destroy. */
    attnrt_status_t (*event_create)(void *device, void **event);
    /* (optional; NULL with event_create) */
    void (*event_destroy)(void *device, void *event);
    /* (optional; NULL with event_create) Records the event on `stream`. */
    attnrt_status_t (*event_record)(void *device, void *event, void *stream);
    /* (optional; NULL with event_create) Waits for both, then *ms = end - start in milliseconds. */
    attnrt_status_t (*event_elapsed_ms)(void *device, void *start, void *end, float *ms);

    /* --- capabilities -------------------------------------------------------------------------- */
    /* (optional; NULL: every op unsupported, reason "plugin has no capability query")
     * Returns ATTNRT_OK when the device supports the combination, ATTNRT_ERR_UNSUPPORTED with a
     * human reason in `reason` (caller-owned, NUL-terminated, truncated to reason_cap) when not. */
    attnrt_status_t (*op_supported)(void *device, const attnrt_op_query_t *query, char *reason, size_t reason_cap);
    /* --- ops (1.1). NULL: the op is unsupported. `stream` as above; a run never allocates, never
     * synchronises and never reads device data on the host, so it can be captured in a graph. --- */
    /* Writes K/V rows into the caches. */
    attnrt_status_t (*kv_write)(void *device, const attnrt_kv_write_args_t *args, void *stream);
    /* Plans an attention batch: *plan (plugin-owned until attention_plan_destroy) holds the work split;
     * *workspace_bytes is what attention_run needs from the caller (0 allowed). Tensor data may be NULL. */
    attnrt_status_t (*attention_plan)(void *device, const attnrt_attention_args_t *args,
                                      const attnrt_batch_host_t *batch, void **plan, size_t *workspace_bytes);
    /* Frees a plan. */
    void (*attention_plan_destroy)(void *device, void *plan);
    /* Runs a planned batch with the same shapes; `workspace` (device memory, >= the planned bytes) is
     * borrowed until the work completes on `stream`. */
    attnrt_status_t (*attention_run)(void *device, const void *plan, const attnrt_attention_args_t *args,
                                     void *workspace, size_t workspace_bytes, void *stream);
    /* Merges partial states. */
    attnrt_status_t (*merge_states)(void *device, const attnrt_merge_args_t *args, void *stream);

    /* --- MLA, linear ops, options, selection ------------------------------------------------------------------------------------ */
    /* (optional; NULL: options other than none are refused) device_open with key/value options
     * (borrowed for the call), e.g. {"profile", "rbln-atom"}. An unknown key is an error. */
    attnrt_status_t (*device_open_with_options)(void *plugin, uint32_t index, const attnrt_device_attribute_t *options,
                                                uint32_t num_options, void **device);
    /* MLA plan / run / destroy, as for attention. */
    attnrt_status_t (*mla_plan)(void *device, const attnrt_mla_args_t *args, const attnrt_batch_host_t *batch,
                                void **plan, size_t *workspace_bytes);
    attnrt_status_t (*mla_run)(void *device, const void *plan, const attnrt_mla_args_t *args, void *workspace,
                               size_t workspace_bytes, void *stream);
    /* Lightning plan / run. `batch` carries query_start_loc (block_table unused). */
    attnrt_status_t (*lightning_plan)(void *device, const attnrt_lightning_args_t *args,
                                      const attnrt_batch_host_t *batch, const attnrt_state_host_t *states,
                                      void **plan, size_t *workspace_bytes);
    attnrt_status_t (*lightning_run)(void *device, const void *plan, const attnrt_lightning_args_t *args,
                                     void *workspace, size_t workspace_bytes, void *stream);
    /* Gated delta plan / run. */
    attnrt_status_t (*gated_delta_plan)(void *device, const attnrt_gated_delta_args_t *args,
                                        const attnrt_batch_host_t *batch, const attnrt_state_host_t *states,
                                        void **plan, size_t *workspace_bytes);
    attnrt_status_t (*gated_delta_run)(void *device, const void *plan, const attnrt_gated_delta_args_t *args,
                                       void *workspace, size_t workspace_bytes, void *stream);
    /* Frees any plan made by mla_plan, lightning_plan or gated_delta_plan. */
    void (*plan_destroy)(void *device, void *plan);
    /* (optional; NULL: the runtime answers kernel "paged" with the config's block size) Kernel
     * selection: ATTNRT_OK with *selection filled, or ATTNRT_ERR_UNSUPPORTED / INVALID_ARGUMENT with
     * the device's own message in last_error. */
    attnrt_status_t (*select_attention)(void *device, const attnrt_attention_config_t *config,
                                        attnrt_attention_selection_t *selection);
    /* (optional; NULL: unsupported) Counters of the last op run on this device. */
    attnrt_status_t (*last_op_stats)(void *device, attnrt_op_stats_t *stats);

    /* --- 2.0: native streams and events -------------------------------------------------------- */
    /* (optional; NULL: the device has no native streams, wrapping is refused) Wraps the device API's own
     * stream (CUstream, hipStream_t, a Level Zero command list) without taking ownership: *stream is
     * plugin-owned until stream_destroy, which then frees the wrapper only (no synchronisation, the
     * native stream stays the engine's). Work on it is asynchronous like on a created stream. `native`
     * may be NULL where the device API names a stream so (cuda's legacy default stream). */
    attnrt_status_t (*stream_wrap)(void *device, void *native, void **stream);
    /* (optional; NULL with stream_wrap) The native handle of a created or wrapped stream; NULL stream:
     * the default stream's handle. */
    attnrt_status_t (*stream_native)(void *device, void *stream, void **native);
    /* (optional; NULL: refused) Makes later work on `stream` wait for `event` without blocking the host. */
    attnrt_status_t (*stream_wait_event)(void *device, void *stream, void *event);
    /* (optional; NULL: refused) Wraps a native event (CUevent, hipEvent_t, ze_event_handle_t) without
     * taking ownership; event_destroy frees the wrapper only. */
    attnrt_status_t (*event_wrap)(void *device, void *native, void **event);
    /* (optional; NULL with event_wrap) The native handle of a created or wrapped event. */
    attnrt_status_t (*event_native)(void *device, void *event, void **native);
    /* (optional; NULL: refused) Blocks until the work recorded before the event is done. */
    attnrt_status_t (*event_synchronize)(void *device, void *event);

    /* --- 2.0: capacity plans ------------------------------------------------------------------- */
    /* (optional; NULL: capacity plans refused) Plans paged attention for any batch within `capacity`;
     * `args` tensors have capacity shapes (query / out [max_tokens, ...], block_table [max_seqs,
     * max_blocks_per_seq], query_start_loc [max_seqs + 1], seq_lens [max_seqs]); the runtime passes the
     * capacity resolved (no zero defaults) and checked against those tensors. *workspace_bytes covers
     * every such batch: an update never needs more. The plan computes nothing until
     * attention_plan_update gave it a batch. Freed with attention_plan_destroy; run with attention_run
     * and args of the capacity shapes: the first num_seqs requests are computed, rows past
     * query_start_loc[num_seqs] are not written, block_table rows past num_seqs are not read. */
    attnrt_status_t (*attention_plan_capacity)(void *device, const attnrt_attention_args_t *args,
                                               const attnrt_capacity_t *capacity, void **plan,
                                               size_t *workspace_bytes);
    /* (optional; NULL with attention_plan_capacity) Replaces the batch of a capacity plan (already
     * checked against the capacity by the runtime). Device metadata goes into buffers the plan owns,
     * written in order on `stream` (host memory of `batch` is borrowed for the call only), so a run
     * captured in a graph replays the new batch. Runs already queued on `stream` see the old batch; runs
     * on other streams are ordered by the caller. On failure the runtime refuses runs of the plan until
     * an update succeeds. */
    attnrt_status_t (*attention_plan_update)(void *device, void *plan, const attnrt_batch_host_t *batch,
                                             void *stream);
};
#define ATTNRT_PLUGIN_API_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_plugin_api_t, attention_plan_update)
ATTNRT_CHECK_LAST_FIELD(attnrt_plugin_api_t, attention_plan_update);

/* The one exported symbol. Receives the runtime's ABI version; returns the plugin's static vtable, or
 * NULL when it cannot serve that runtime (its message then in last_error). No other symbol is looked up. */
#define ATTNRT_PLUGIN_ENTRY_SYMBOL "attnrt_plugin_get_api"
typedef const attnrt_plugin_api_t *(*attnrt_plugin_get_api_fn)(uint32_t host_abi_major, uint32_t host_abi_minor);

#ifdef __cplusplus
}
#endif

#endif /* ATTNRT_PLUGIN_H */
