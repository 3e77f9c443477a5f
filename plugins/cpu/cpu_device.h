/* What the CPU plugin knows about the machine it runs on. */
#ifndef ATTNRT_CPU_DEVICE_H
#define ATTNRT_CPU_DEVICE_H

#include "attnrt_plugin.h"

/* Number of CPUs this process may run on (its affinity mask), at least 1. */
uint32_t cpu_usable_cores(void);
/* Fills the properties of cpu:0. */
void cpu_fill_properties(attnrt_device_properties_t *props);
/* Number of key/value attributes, and attribute i. */
uint32_t cpu_attribute_count(void);
attnrt_status_t cpu_fill_attribute(uint32_t i, attnrt_device_attribute_t *attr);

#endif
