/* A strict RFC 8259 JSON parser for the tests: it rejects what a lenient parser would let through
 * (raw control characters in strings, bad escapes, invalid UTF-8, duplicate keys, trailing text). */
#ifndef ATTNRT_TEST_JSON_PARSE_H
#define ATTNRT_TEST_JSON_PARSE_H

#include <stddef.h>

typedef enum jv_type { JV_NULL, JV_BOOL, JV_NUMBER, JV_STRING, JV_ARRAY, JV_OBJECT } jv_type_t;

typedef struct jv {
    jv_type_t   type;
    int         boolean;
    double      number;
    char       *string;  /* JV_STRING: decoded UTF-8, NUL-terminated (a \u0000 would end it early) */
    size_t      count;   /* JV_ARRAY / JV_OBJECT members */
    struct jv  *items;
    char      **keys;    /* JV_OBJECT: decoded keys, parallel to items */
} jv_t;

/* Parses the whole of `text`; NULL on any error, with the reason and byte offset in err. */
jv_t *jv_parse(const char *text, char *err, size_t err_cap);
void jv_free(jv_t *v);

/* Lookups that return NULL when the value is of another type or the member is absent. */
const jv_t *jv_get(const jv_t *object, const char *key);
const jv_t *jv_at(const jv_t *array, size_t index);
const char *jv_str(const jv_t *v);
/* "a.b.0.c": keys and array indices; NULL when any step is missing. */
const jv_t *jv_path(const jv_t *root, const char *path);

#endif
