/* plugin_entry.c — see plugin_entry.h. */
#include "plugin_entry.h"

const attnrt_plugin_api_t *plugin_api_for_host(const attnrt_plugin_api_t *api, uint32_t host_abi_major,
                                               uint32_t host_abi_minor)
{
    (void)host_abi_minor; /* any minor of our major: the runtime reads only what both know */
    if (host_abi_major != ATTNRT_ABI_MAJOR) {
        plugin_fail(ATTNRT_ERR_ABI_MISMATCH, "%s plugin speaks ABI %d.x, the runtime %u.x", api->name,
                    ATTNRT_ABI_MAJOR, host_abi_major);
        return NULL;
    }
    return api;
}
