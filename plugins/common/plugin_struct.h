/* plugin_struct.h — reading a caller's versioned struct (ABI rule: struct_size first, fields only ever
 * appended): a plugin works on its own copy, never reads past the caller's struct_size, and sees zero
 * in the fields an older caller's smaller struct lacks. */
#ifndef ATTNRT_PLUGIN_STRUCT_H
#define ATTNRT_PLUGIN_STRUCT_H

#include <stddef.h>
#include <string.h>

static inline void plugin_copy_struct(void *dst, size_t dst_size, const void *src, size_t src_size)
{
    memset(dst, 0, dst_size);
    memcpy(dst, src, src_size < dst_size ? src_size : dst_size);
}

/* local = *in as far as both sizes go, the rest zero. */
#define PLUGIN_COPY_IN(local, in) plugin_copy_struct(&(local), sizeof(local), (in), (in)->struct_size)

#endif /* ATTNRT_PLUGIN_STRUCT_H */
