/* fake_native.h — the native streams and events of the test plugin native_plugin.c ("native:0"). The test
 * owns them, as an engine owns its CUstream, and reads in them what the plugin did: how often each was wrapped,
 * unwrapped, waited on, recorded into or synchronised, and (its magic intact) that the plugin never destroyed one
 * it borrowed. */
#ifndef ATTNRT_TEST_FAKE_NATIVE_H
#define ATTNRT_TEST_FAKE_NATIVE_H

#include <stdint.h>

#define FAKE_NATIVE_MAGIC 0x4e415456u

typedef struct fake_native {
    uint32_t magic;       /* FAKE_NATIVE_MAGIC while alive; the plugin zeroes it when it destroys one it owns */
    int      is_default;  /* the plugin's default stream (what stream_native answers for the NULL stream) */
    int      owned;       /* made by the plugin's stream_create / event_create */
    int      wraps;       /* stream_wrap / event_wrap calls that took it */
    int      unwraps;     /* wrappers of it freed by stream_destroy / event_destroy */
    int      waits;       /* stream_wait_event calls on it as the waiting stream */
    int      records;     /* event_record calls into it */
    int      syncs;       /* event_synchronize calls on it */
    const struct fake_native *waited_for; /* the event of the last wait */
    int      refuse;      /* the test's knob: wrapping it fails with INVALID_ARGUMENT */
    int      null_handle; /* the test's knob: wrapping it "succeeds" with a NULL handle (a broken plugin) */
} fake_native_t;

#endif /* ATTNRT_TEST_FAKE_NATIVE_H */
