/* plugin_host.h — how a synchronous device answers the ABI's memory, stream and event entries: a
 * device whose memory is host memory and whose every call completes on the caller's thread before it
 * returns (cpu, npu_sim). Its streams are tokens (work never waits on one: stream_synchronize returns
 * at once), its copies are memmove in every direction, and its events hold the device clock's reading
 * at record (a host clock, or a simulated one), so elapsed times are that clock's.
 *
 * The device handle such a plugin returns from device_open starts with a plugin_host_device_t, which
 * the shared entries read; PLUGIN_HOST_DEVICE_ENTRIES puts them in the plugin's vtable.
 *
 * Ownership: streams and events are plugin-owned from create until destroy; copies borrow their host
 * pointers for the call only (the call has completed when it returns). */
#ifndef ATTNRT_PLUGIN_HOST_H
#define ATTNRT_PLUGIN_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "attnrt_plugin.h"

typedef struct plugin_host_device {
    char   name[ATTNRT_NAME_MAX];  /* "cpu:0", "npu_sim:0 (rbln-atom)": how messages name the device  */
    double (*clock)(void *device); /* read by event_record: the device's own clock, in ticks          */
    double ms_per_tick;            /* ticks to milliseconds, for event_elapsed_ms                     */
} plugin_host_device_t;

/* A host clock for plugin_host_device_t.clock: CLOCK_MONOTONIC in milliseconds (ms_per_tick 1). */
double plugin_host_clock_ms(void *device);

attnrt_status_t plugin_host_mem_copy(void *device, void *dst, const void *src, size_t bytes, uint32_t kind,
                                     void *stream);
attnrt_status_t plugin_host_mem_set(void *device, void *dst, int value, size_t bytes, void *stream);
attnrt_status_t plugin_host_stream_create(void *device, void **stream);
attnrt_status_t plugin_host_stream_synchronize(void *device, void *stream);
attnrt_status_t plugin_host_event_create(void *device, void **event);
/* stream_destroy and event_destroy: both handles are plain allocations. */
void            plugin_host_handle_destroy(void *device, void *handle);
attnrt_status_t plugin_host_event_record(void *device, void *event, void *stream);
attnrt_status_t plugin_host_event_elapsed_ms(void *device, void *start, void *end, float *ms);
/* stream_wait_event and event_synchronize: both return at once, since the work before any event completed
 * within its call. The device has no native streams or events, so stream_wrap / stream_native / event_wrap /
 * event_native stay NULL (the runtime refuses them, naming the device). */
attnrt_status_t plugin_host_stream_wait_event(void *device, void *stream, void *event);
attnrt_status_t plugin_host_event_synchronize(void *device, void *event);

/* device_count of a plugin with one device (cpu:0, npu_sim:0). */
attnrt_status_t plugin_one_device_count(void *plugin, uint32_t *count);
/* ATTNRT_OK for index 0, else INVALID_ARGUMENT: "<plugin> has one device (<device>); asked for 3". */
attnrt_status_t plugin_one_device_index(const char *plugin, const char *device, uint32_t index);

/* The vtable entries above, for a plugin's attnrt_plugin_api_t initializer. */
#define PLUGIN_HOST_DEVICE_ENTRIES                                                                          \
    .mem_copy = plugin_host_mem_copy, .mem_set = plugin_host_mem_set,                                       \
    .stream_create = plugin_host_stream_create, .stream_destroy = plugin_host_handle_destroy,               \
    .stream_synchronize = plugin_host_stream_synchronize, .event_create = plugin_host_event_create,         \
    .event_destroy = plugin_host_handle_destroy, .event_record = plugin_host_event_record,                  \
    .event_elapsed_ms = plugin_host_event_elapsed_ms, .stream_wait_event = plugin_host_stream_wait_event,   \
    .event_synchronize = plugin_host_event_synchronize

#endif /* ATTNRT_PLUGIN_HOST_H */
