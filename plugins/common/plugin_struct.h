/* plugin_struct.h — versioned structs across the boundary (ABI rule: struct_size first, fields only
 * ever appended). Reading a caller's struct, a plugin works on its own copy, never reads past the
 * caller's struct_size, and sees zero in the fields an older caller's smaller struct lacks. Filling
 * one, it writes no byte past the caller's struct_size and leaves that size as the caller set it.
 *
 * Ownership: the caller's struct is borrowed for the call; the local copy is the plugin's. */
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

/* *out = local as far as out's struct_size goes, out's struct_size kept (a struct_size field starts
 * both). */
static inline void plugin_copy_out(void *out, const void *local, size_t local_size)
{
    size_t keep;
    memcpy(&keep, out, sizeof keep);
    memcpy(out, local, keep < local_size ? keep : local_size);
    memcpy(out, &keep, sizeof keep);
}

#define PLUGIN_COPY_OUT(out, local) plugin_copy_out((out), &(local), sizeof(local))

#endif /* ATTNRT_PLUGIN_STRUCT_H */
