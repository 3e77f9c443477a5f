/* plugin_entry.h — the parts of a plugin's vtable every plugin writes alike: its fixed head (ABI version,
 * name, version, last_error) and the one exported symbol, attnrt_plugin_get_api. A plugin lists only
 * the entries it implements; what it leaves out reads NULL ("unsupported" to the runtime):
 *
 *     static const attnrt_plugin_api_t cpu_api = {
 *         PLUGIN_API_HEAD("cpu", "0.1.0"),
 *         .probe = cpu_probe, .init = cpu_init, .shutdown = cpu_shutdown,
 *         ...
 *         PLUGIN_API_OPS(cpu),
 *     };
 *     PLUGIN_DEFINE_ENTRY(cpu_api)
 *
 * Ownership: the vtable is static and plugin-owned for the life of the loaded library; `name` and
 * `version` are static strings. The runtime never writes to either. */
#ifndef ATTNRT_PLUGIN_ENTRY_H
#define ATTNRT_PLUGIN_ENTRY_H

#include <stdint.h>

#include "attnrt_plugin.h"
#include "plugin_error.h"

/* Designated initializers of the head: the ABI this plugin was built against, its name and version,
 * and the thread-local error buffer (plugin_error.h) as last_error. */
#define PLUGIN_API_HEAD(name_, version_)                                                                  \
    .struct_size = ATTNRT_PLUGIN_API_STRUCT_SIZE, .abi_major = ATTNRT_ABI_MAJOR, .abi_minor = ATTNRT_ABI_MINOR, \
    .name = (name_), .version = (version_), .last_error = plugin_last_error

/* The op entries of a plugin that runs every op of ABI 1.2: op_supported and one entry per op, named
 * <p>_op_supported and <p>_<entry>_op (cpu_kv_write_op, cuda_mla_run_op, ...). */
#define PLUGIN_API_OPS(p)                                                                                   \
    .op_supported = p##_op_supported, .kv_write = p##_kv_write_op, .merge_states = p##_merge_states_op,     \
    .attention_plan = p##_attention_plan_op, .attention_plan_destroy = p##_attention_plan_destroy_op,       \
    .attention_run = p##_attention_run_op, .mla_plan = p##_mla_plan_op, .mla_run = p##_mla_run_op,          \
    .lightning_plan = p##_lightning_plan_op, .lightning_run = p##_lightning_run_op,                         \
    .gated_delta_plan = p##_gated_delta_plan_op, .gated_delta_run = p##_gated_delta_run_op,                 \
    .plan_destroy = p##_plan_destroy_op

/* What attnrt_plugin_get_api answers: `api` for a runtime of the same ABI major (any minor: the runtime
 * reads only the entries both know), else NULL with "<name> plugin speaks ABI m.x, the runtime n.x". */
const attnrt_plugin_api_t *plugin_api_for_host(const attnrt_plugin_api_t *api, uint32_t host_abi_major,
                                               uint32_t host_abi_minor);

/* Defines the exported entry symbol of a plugin whose vtable is the static `api`. */
#define PLUGIN_DEFINE_ENTRY(api)                                                                            \
    ATTNRT_PLUGIN_EXPORT const attnrt_plugin_api_t *attnrt_plugin_get_api(uint32_t host_abi_major,          \
                                                                          uint32_t host_abi_minor);         \
    ATTNRT_PLUGIN_EXPORT const attnrt_plugin_api_t *attnrt_plugin_get_api(uint32_t host_abi_major,          \
                                                                          uint32_t host_abi_minor)          \
    {                                                                                                       \
        return plugin_api_for_host(&(api), host_abi_major, host_abi_minor);                                \
    }

#endif /* ATTNRT_PLUGIN_ENTRY_H */
