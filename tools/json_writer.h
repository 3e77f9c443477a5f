/* A tiny streaming JSON writer for the tools: pretty-printed, strings escaped per RFC 8259. */
#ifndef ATTNRT_JSON_WRITER_H
#define ATTNRT_JSON_WRITER_H

#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

/* The caller owns the writer and `out` (borrowed until json_finish). Nesting deeper than
 * JSON_MAX_DEPTH, or a value where a key is due, sets `error` and writes nothing more. */
typedef struct json_writer {
    FILE *out;
    int   depth;
    int   count[JSON_MAX_DEPTH + 1];     /* values written so far at each level; [0] is the top */
    char  is_object[JSON_MAX_DEPTH + 1];
    char  is_inline[JSON_MAX_DEPTH + 1]; /* written on one line, as are containers inside it */
    int   after_key;                 /* a key was written; its value is next      */
    int   error;
} json_writer_t;

void json_init(json_writer_t *w, FILE *out);
/* Ends the document with a newline; returns 0 when it is complete and well-formed, -1 otherwise. */
int json_finish(json_writer_t *w);

void json_begin_object(json_writer_t *w);
void json_end_object(json_writer_t *w);
void json_begin_array(json_writer_t *w);
/* Containers written on one line: `[1, 2]`, `{"major": 1, "minor": 0}`. */
void json_begin_object_inline(json_writer_t *w);
void json_begin_array_inline(json_writer_t *w);
void json_end_array(json_writer_t *w);
/* The next member's key, inside an object. */
void json_key(json_writer_t *w, const char *key);

/* Escapes quotes, backslash and control characters; bytes that are not UTF-8 become U+FFFD.
 * NULL writes null. */
void json_string(json_writer_t *w, const char *s);
void json_uint(json_writer_t *w, uint64_t v);
void json_int(json_writer_t *w, int64_t v);
void json_bool(json_writer_t *w, int v);
void json_null(json_writer_t *w);

/* A key and its value, inside an object. */
void json_member_string(json_writer_t *w, const char *key, const char *s);
void json_member_uint(json_writer_t *w, const char *key, uint64_t v);
void json_member_bool(json_writer_t *w, const char *key, int v);

/* Writes `s` as a JSON string literal (with its quotes) to `out`: the escaping alone. */
void json_write_escaped(FILE *out, const char *s);

#endif
