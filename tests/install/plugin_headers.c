/* A plugin vendor's translation unit: the ABI headers alone, found through attnrt-plugin (pkg-config),
 * attnrt::plugin (CMake) or dependency('attnrt-plugin') (Meson), with nothing to link. */
#include <attnrt_plugin.h>

size_t plugin_headers_api_size(void);
size_t plugin_headers_api_size(void) { return ATTNRT_ABI_MAJOR * sizeof(attnrt_plugin_api_t); }
