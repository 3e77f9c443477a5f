/* The registry's public queries: plugins, devices, their properties and attributes, lookup by name and the
 * default device. Each holds the registry (attnrt_registry_enter) for its whole call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"

static registry_t *const reg = &attnrt_reg;

/* True when the plugin list may be read after the init status `status`: it holds every record even
 * after a failed explicit load, but nothing after running out of memory. */
static bool plugins_readable(attnrt_status_t status)
{
    return status == ATTNRT_OK || (reg->ready && !reg->retry);
}

attnrt_status_t attnrt_plugin_count(uint32_t *count)
{
    static const char fn[] = "attnrt_plugin_count";
    attnrt_clear_error();
    if (!count) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: count is NULL", fn);
    attnrt_status_t status = attnrt_registry_enter(fn);
    if (plugins_readable(status)) {
        attnrt_clear_error();
        *count = reg->plugin_count;
        status = ATTNRT_OK;
    }
    attnrt_registry_leave();
    return status;
}

attnrt_status_t attnrt_plugin_get_info(uint32_t index, attnrt_plugin_info_t *info)
{
    static const char fn[] = "attnrt_plugin_get_info";
    attnrt_clear_error();
    if (!info) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: info is NULL", fn);
    if (info->struct_size < ATTNRT_STRUCT_SIZE(attnrt_plugin_info_t, device_count))
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: info->struct_size = %zu is smaller than the %zu of this "
                           "API version; set it to sizeof(attnrt_plugin_info_t)", fn, info->struct_size,
                           (size_t)ATTNRT_STRUCT_SIZE(attnrt_plugin_info_t, device_count));
    attnrt_status_t status = attnrt_registry_enter(fn);
    if (plugins_readable(status)) {
        attnrt_clear_error();
        status = ATTNRT_OK;
        if (index >= reg->plugin_count) {
            status = attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: index = %u >= plugin count = %u", fn, index,
                                 reg->plugin_count);
        } else {
            const attnrt_plugin_t *p = &reg->plugins[index];
            info->path = registry_or_lost(p->path);
            info->name = registry_or_lost(p->name);
            info->version = registry_or_lost(p->version);
            info->abi_major = p->abi_major;
            info->abi_minor = p->abi_minor;
            info->status = p->status;
            info->reason = registry_or_lost(p->reason);
            info->device_count = p->status == ATTNRT_OK ? p->device_count : 0;
        }
    }
    attnrt_registry_leave();
    return status;
}

attnrt_status_t attnrt_registry_device(const char *fn, uint32_t index, const attnrt_device_ref_t **ref)
{
    if (index >= reg->device_count)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: index = %u >= device count = %u", fn, index,
                           reg->device_count);
    *ref = &reg->devices[index];
    return ATTNRT_OK;
}

attnrt_status_t attnrt_device_count(uint32_t *count)
{
    static const char fn[] = "attnrt_device_count";
    attnrt_clear_error();
    if (!count) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: count is NULL", fn);
    attnrt_status_t status = attnrt_registry_enter(fn);
    if (status == ATTNRT_OK) *count = reg->device_count;
    attnrt_registry_leave();
    return status;
}

/* The plugin fills a full-size copy: terminated and named as the registry knows the device. */
static attnrt_status_t read_properties(const char *fn, const attnrt_device_ref_t *ref, attnrt_device_properties_t *full)
{
    memset(full, 0, sizeof *full);
    full->struct_size = sizeof *full;
    attnrt_status_t status = ref->plugin->api.device_properties(ref->plugin->handle, ref->index, full);
    if (status != ATTNRT_OK) {
        char what[128];
        snprintf(what, sizeof what, "%s(%s)", fn, ref->name);
        return attnrt_plugin_fail(ref->plugin, status, what);
    }
    full->struct_size = sizeof *full;
    attnrt_strlcpy(full->name, ref->name, sizeof full->name);
    full->vendor[sizeof full->vendor - 1] = full->model[sizeof full->model - 1] = '\0';
    full->arch[sizeof full->arch - 1] = full->driver[sizeof full->driver - 1] = '\0';
    return ATTNRT_OK;
}

static attnrt_status_t properties_locked(const char *fn, uint32_t index, attnrt_device_properties_t *props)
{
    const attnrt_device_ref_t *ref = NULL;
    attnrt_status_t status = attnrt_registry_device(fn, index, &ref);
    attnrt_device_properties_t full;
    if (status == ATTNRT_OK) status = read_properties(fn, ref, &full);
    if (status != ATTNRT_OK) return status;
    /* The caller gets only the fields its struct_size covers. */
    size_t caller_size = props->struct_size;
    memcpy(props, &full, caller_size < sizeof full ? caller_size : sizeof full);
    props->struct_size = caller_size;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_device_get_properties(uint32_t index, attnrt_device_properties_t *props)
{
    static const char fn[] = "attnrt_device_get_properties";
    attnrt_clear_error();
    if (!props) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: props is NULL", fn);
    if (props->struct_size < ATTNRT_STRUCT_SIZE(attnrt_device_properties_t, name))
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: props->struct_size = %zu; set it to "
                           "sizeof(attnrt_device_properties_t)", fn, props->struct_size);
    attnrt_status_t status = attnrt_registry_enter(fn);
    if (status == ATTNRT_OK) status = properties_locked(fn, index, props);
    attnrt_registry_leave();
    return status;
}

static attnrt_status_t attribute_locked(const char *fn, uint32_t index, uint32_t i, attnrt_device_attribute_t *attr)
{
    const attnrt_device_ref_t *ref = NULL;
    attnrt_status_t status = attnrt_registry_device(fn, index, &ref);
    if (status != ATTNRT_OK) return status;
    const attnrt_plugin_t *p = ref->plugin;
    if (!p->api.device_attribute)
        return attnrt_fail(ATTNRT_ERR_UNSUPPORTED, "%s(%s): the %s plugin reports no device attributes", fn, ref->name,
                           p->name);
    attnrt_device_properties_t props;
    status = read_properties(fn, ref, &props);
    if (status != ATTNRT_OK) return status;
    /* Checked here, so that the plugin is asked only for attributes it has said it has. */
    if (i >= props.attribute_count)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: i = %u >= attribute_count = %u of %s", fn, i,
                           props.attribute_count, ref->name);
    attnrt_device_attribute_t full;
    memset(&full, 0, sizeof full);
    full.struct_size = sizeof full;
    status = p->api.device_attribute(p->handle, ref->index, i, &full);
    if (status != ATTNRT_OK) {
        char what[160];
        snprintf(what, sizeof what, "%s(%s, i = %u)", fn, ref->name, i);
        return attnrt_plugin_fail(p, status, what);
    }
    full.struct_size = sizeof full;
    full.key[sizeof full.key - 1] = full.value[sizeof full.value - 1] = '\0';
    *attr = full;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_device_get_attribute(uint32_t index, uint32_t i, attnrt_device_attribute_t *attr)
{
    static const char fn[] = "attnrt_device_get_attribute";
    attnrt_clear_error();
    if (!attr) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: attr is NULL", fn);
    if (attr->struct_size < sizeof *attr)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: attr->struct_size = %zu; set it to "
                           "sizeof(attnrt_device_attribute_t)", fn, attr->struct_size);
    attnrt_status_t status = attnrt_registry_enter(fn);
    if (status == ATTNRT_OK) status = attribute_locked(fn, index, i, attr);
    attnrt_registry_leave();
    return status;
}

attnrt_status_t attnrt_device_get_plugin(uint32_t index, uint32_t *plugin_index)
{
    static const char fn[] = "attnrt_device_get_plugin";
    attnrt_clear_error();
    if (!plugin_index) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: plugin_index is NULL", fn);
    const attnrt_device_ref_t *ref = NULL;
    attnrt_status_t status = attnrt_registry_enter(fn);
    if (status == ATTNRT_OK) status = attnrt_registry_device(fn, index, &ref);
    if (status == ATTNRT_OK) *plugin_index = (uint32_t)(ref->plugin - reg->plugins);
    attnrt_registry_leave();
    return status;
}

/* With the registry held. `what` starts the message: the function, and what it was looking for. */
static attnrt_status_t find_locked(const char *what, const char *name, uint32_t *index)
{
    char names[512] = "";
    for (uint32_t i = 0; i < reg->device_count; i++) {
        if (strcmp(reg->devices[i].name, name) == 0) {
            *index = i;
            return ATTNRT_OK;
        }
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", reg->devices[i].name);
    }
    return attnrt_fail(ATTNRT_ERR_NOT_FOUND, "%s: no device named '%s'; devices: %s", what, name,
                       names[0] ? names : "(none)");
}

attnrt_status_t attnrt_device_find(const char *name, uint32_t *index)
{
    static const char fn[] = "attnrt_device_find";
    attnrt_clear_error();
    if (!name || !index) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, name ? "index" : "name");
    attnrt_status_t status = attnrt_registry_enter(fn);
    if (status == ATTNRT_OK) status = find_locked(fn, name, index);
    attnrt_registry_leave();
    return status;
}

/* Lower is preferred: GPUs, then the CPU, then anything else (simulators are opt-in). */
static int device_rank(uint32_t device_type)
{
    switch (device_type) {
    case ATTNRT_DEVICE_TYPE_CUDA:
    case ATTNRT_DEVICE_TYPE_ROCM:
    case ATTNRT_DEVICE_TYPE_ONEAPI: return 0;
    case ATTNRT_DEVICE_TYPE_CPU: return 1;
    default: return 2;
    }
}

static attnrt_status_t default_locked(const char *fn, uint32_t *index)
{
    const char *wanted = secure_getenv("ATTNRT_DEVICE");
    if (wanted && wanted[0]) {
        char what[256];
        snprintf(what, sizeof what, "%s: ATTNRT_DEVICE=%.200s", fn, wanted);
        return find_locked(what, wanted, index);
    }
    if (reg->device_count == 0)
        return attnrt_fail(ATTNRT_ERR_NO_DEVICE, "%s: no device: no plugin loaded a device (run attnrt-info to see "
                           "each plugin's reason)", fn);
    uint32_t best = 0;
    for (uint32_t i = 1; i < reg->device_count; i++)
        if (device_rank(reg->devices[i].device_type) < device_rank(reg->devices[best].device_type)) best = i;
    *index = best;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_device_default(uint32_t *index)
{
    static const char fn[] = "attnrt_device_default";
    attnrt_clear_error();
    if (!index) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: index is NULL", fn);
    attnrt_status_t status = attnrt_registry_enter(fn);
    if (status == ATTNRT_OK) status = default_locked(fn, index);
    attnrt_registry_leave();
    return status;
}

attnrt_status_t attnrt_registry_pick(const char *fn, const char *name, const attnrt_device_ref_t **ref)
{
    uint32_t index = 0;
    attnrt_status_t status = (name && name[0]) ? find_locked(fn, name, &index) : default_locked(fn, &index);
    if (status == ATTNRT_OK) *ref = &reg->devices[index];
    return status;
}
