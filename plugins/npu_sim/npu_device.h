/* npu_device.h — one opened simulated NPU (what device_open returns): its profile and front end, its
 * memory budget, its simulated clock and the counters of its last op. Internal to the plugin. */
#ifndef ATTNRT_NPU_DEVICE_H
#define ATTNRT_NPU_DEVICE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "attnrt_plugin.h"
#include "npu_profile.h"
#include "npu_select.h"
#include "plugin_host.h"

typedef struct npu_device {
    plugin_host_device_t host;    /* first: the shared stream, event and copy entries read it    */
    npu_select_ctx_t  sel;        /* profile, front end, prefill chunk: fixed at open             */
    uint64_t          budget;     /* usable device memory (profile)                              */
    atomic_uint_least64_t used;   /* bytes allocated on this device                              */
    pthread_mutex_t   lock;       /* guards clock_us and last                                    */
    double            clock_us;   /* simulated time of all ops so far (events read it)           */
    attnrt_op_stats_t last;       /* counters of the last op                                     */
} npu_device_t;

/* Human name for messages: "npu_sim:0 (rbln-atom)". */
#define NPU_DEV_FMT "npu_sim:0 (%s)"
#define NPU_DEV_ARG(d) ((d)->sel.profile->name)

/* Records an op's counters as the device's last and advances its clock by their time. */
void   npu_device_record(npu_device_t *d, const attnrt_op_stats_t *stats);
/* The simulated clock, in microseconds. */
double npu_device_clock(npu_device_t *d);

/* Memory (npu_memory.c): host memory handed out against the profile's budget. */
attnrt_status_t npu_mem_alloc(npu_device_t *d, size_t bytes, void **ptr);
void            npu_mem_free(npu_device_t *d, void *ptr);
/* Bytes allocated on every open device together (for device_properties' memory_free). */
uint64_t        npu_mem_used_all(void);

#endif
