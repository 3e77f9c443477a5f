/* The test plugin's "planner" variant (TP_PLANNER): its vtable plus plans of paged attention, MLA,
 * lightning and gated delta that ask the caller for TP_PLANNER_WORKSPACE bytes of workspace, so the
 * runtime's workspace check can be tested on a device whose plans need one (cpu plans need none). */
#ifndef TEST_PLUGIN_PLANNER_H
#define TEST_PLUGIN_PLANNER_H

#include "attnrt_plugin.h"

#define TP_PLANNER_WORKSPACE 4096

/* `base` with op_supported answering yes to every op and the plan / run entries of the four ops; static. */
const attnrt_plugin_api_t *tp_planner_api(const attnrt_plugin_api_t *base);

#endif /* TEST_PLUGIN_PLANNER_H */
