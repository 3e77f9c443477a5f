/* A strict recursive-descent JSON parser (RFC 8259) that builds a small tree for the tests to inspect. */
#include "json_parse.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JV_MAX_DEPTH 64

typedef struct parser {
    const unsigned char *s;
    size_t               pos;
    char                *err;
    size_t               err_cap;
    int                  failed;
} parser_t;

static int fail(parser_t *p, const char *what)
{
    if (!p->failed) snprintf(p->err, p->err_cap, "%s at byte %zu", what, p->pos);
    p->failed = 1;
    return -1;
}

static void skip_ws(parser_t *p)
{
    while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' || p->s[p->pos] == '\r') p->pos++;
}

/* Appends one byte to a growing buffer; -1 when out of memory. */
static int put(char **buf, size_t *len, size_t *cap, unsigned char c)
{
    if (*len + 2 > *cap) {
        size_t ncap = *cap ? *cap * 2 : 32;
        char *grown = realloc(*buf, ncap);
        if (!grown) return -1;
        *buf = grown;
        *cap = ncap;
    }
    (*buf)[(*len)++] = (char)c;
    (*buf)[*len] = '\0';
    return 0;
}

static int put_utf8(char **buf, size_t *len, size_t *cap, uint32_t cp)
{
    int rc = 0;
    if (cp < 0x80) return put(buf, len, cap, (unsigned char)cp);
    if (cp < 0x800) {
        rc |= put(buf, len, cap, (unsigned char)(0xC0 | (cp >> 6)));
    } else if (cp < 0x10000) {
        rc |= put(buf, len, cap, (unsigned char)(0xE0 | (cp >> 12)));
        rc |= put(buf, len, cap, (unsigned char)(0x80 | ((cp >> 6) & 0x3F)));
    } else {
        rc |= put(buf, len, cap, (unsigned char)(0xF0 | (cp >> 18)));
        rc |= put(buf, len, cap, (unsigned char)(0x80 | ((cp >> 12) & 0x3F)));
        rc |= put(buf, len, cap, (unsigned char)(0x80 | ((cp >> 6) & 0x3F)));
    }
    return rc | put(buf, len, cap, (unsigned char)(0x80 | (cp & 0x3F)));
}

static int hex4(parser_t *p, uint32_t *out)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p->s[p->pos + (size_t)i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
        else return fail(p, "bad \\u escape");
    }
    p->pos += 4;
    *out = v;
    return 0;
}

/* Length of a well-formed UTF-8 sequence (RFC 3629) at s, 0 when there is none. */
static int utf8_len(const unsigned char *s)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    int len;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (int i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return len;
}

static int parse_string(parser_t *p, char **out)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    if (p->s[p->pos] != '"') return fail(p, "expected a string");
    p->pos++;
    if (put(&buf, &len, &cap, 0) != 0) return fail(p, "out of memory");
    len = 0;
    for (;;) {
        unsigned char c = p->s[p->pos];
        if (c == '"') {
            p->pos++;
            *out = buf;
            return 0;
        }
        if (c == '\0') break;
        if (c < 0x20) {
            free(buf);
            return fail(p, "raw control character in a string");
        }
        int rc = 0;
        if (c == '\\') {
            unsigned char e = p->s[++p->pos];
            p->pos++;
            uint32_t cp;
            switch (e) {
            case '"': case '\\': case '/': rc = put(&buf, &len, &cap, e); break;
            case 'b': rc = put(&buf, &len, &cap, '\b'); break;
            case 'f': rc = put(&buf, &len, &cap, '\f'); break;
            case 'n': rc = put(&buf, &len, &cap, '\n'); break;
            case 'r': rc = put(&buf, &len, &cap, '\r'); break;
            case 't': rc = put(&buf, &len, &cap, '\t'); break;
            case 'u':
                if (hex4(p, &cp) != 0) break;
                if (cp >= 0xD800 && cp <= 0xDBFF) { /* a surrogate pair */
                    uint32_t lo;
                    if (p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u') { fail(p, "lone high surrogate"); break; }
                    p->pos += 2;
                    if (hex4(p, &lo) != 0) break;
                    if (lo < 0xDC00 || lo > 0xDFFF) { fail(p, "bad low surrogate"); break; }
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    fail(p, "lone low surrogate");
                    break;
                }
                rc = put_utf8(&buf, &len, &cap, cp);
                break;
            default: fail(p, "bad escape"); break;
            }
        } else {
            int n = utf8_len(p->s + p->pos);
            if (n == 0) fail(p, "invalid UTF-8 in a string");
            for (int i = 0; i < n && rc == 0; i++) rc = put(&buf, &len, &cap, p->s[p->pos++]);
        }
        if (rc != 0) fail(p, "out of memory");
        if (p->failed) break;
    }
    free(buf);
    return fail(p, "unterminated string");
}

static int parse_number(parser_t *p, double *out)
{
    size_t start = p->pos;
    if (p->s[p->pos] == '-') p->pos++;
    if (p->s[p->pos] == '0') p->pos++;
    else if (p->s[p->pos] >= '1' && p->s[p->pos] <= '9') while (p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
    else return fail(p, "bad number");
    if (p->s[p->pos] == '.') {
        p->pos++;
        if (!(p->s[p->pos] >= '0' && p->s[p->pos] <= '9')) return fail(p, "bad fraction");
        while (p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
    }
    if (p->s[p->pos] == 'e' || p->s[p->pos] == 'E') {
        p->pos++;
        if (p->s[p->pos] == '+' || p->s[p->pos] == '-') p->pos++;
        if (!(p->s[p->pos] >= '0' && p->s[p->pos] <= '9')) return fail(p, "bad exponent");
        while (p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
    }
    *out = strtod((const char *)p->s + start, NULL);
    return 0;
}


static int parse_value(parser_t *p, jv_t *v, int depth);

static int push_member(parser_t *p, jv_t *v, char *key)
{
    jv_t *items = realloc(v->items, (v->count + 1) * sizeof *items);
    if (items) v->items = items;
    char **keys = v->keys;
    if (items && v->type == JV_OBJECT) {
        keys = realloc(v->keys, (v->count + 1) * sizeof *keys);
        if (keys) v->keys = keys;
    }
    if (!items || (!keys && v->type == JV_OBJECT)) {
        free(key);
        return fail(p, "out of memory");
    }
    memset(&v->items[v->count], 0, sizeof v->items[0]);
    if (v->type == JV_OBJECT) v->keys[v->count] = key;
    v->count++;
    return 0;
}

static int parse_container(parser_t *p, jv_t *v, int depth)
{
    int object = p->s[p->pos] == '{';
    char close = object ? '}' : ']';
    v->type = object ? JV_OBJECT : JV_ARRAY;
    if (depth >= JV_MAX_DEPTH) return fail(p, "nested too deeply");
    p->pos++;
    skip_ws(p);
    if (p->s[p->pos] == close) {
        p->pos++;
        return 0;
    }
    for (;;) {
        char *key = NULL;
        if (object) {
            if (parse_string(p, &key) != 0) return -1;
            for (size_t i = 0; i < v->count; i++)
                if (strcmp(v->keys[i], key) == 0) {
                    free(key);
                    return fail(p, "duplicate key");
                }
            skip_ws(p);
            if (p->s[p->pos] != ':') {
                free(key);
                return fail(p, "expected ':'");
            }
            p->pos++;
            skip_ws(p);
        }
        if (push_member(p, v, key) != 0) return -1;
        if (parse_value(p, &v->items[v->count - 1], depth + 1) != 0) return -1;
        skip_ws(p);
        if (p->s[p->pos] == ',') {
            p->pos++;
            skip_ws(p);
            continue;
        }
        if (p->s[p->pos] == close) {
            p->pos++;
            return 0;
        }
        return fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int literal(parser_t *p, const char *word)
{
    size_t n = strlen(word);
    if (strncmp((const char *)p->s + p->pos, word, n) != 0) return fail(p, "unexpected character");
    p->pos += n;
    return 0;
}

static int parse_value(parser_t *p, jv_t *v, int depth)
{
    skip_ws(p);
    unsigned char c = p->s[p->pos];
    switch (c) {
    case '{': case '[': return parse_container(p, v, depth);
    case '"': v->type = JV_STRING; return parse_string(p, &v->string);
    case 't': v->type = JV_BOOL; v->boolean = 1; return literal(p, "true");
    case 'f': v->type = JV_BOOL; return literal(p, "false");
    case 'n': v->type = JV_NULL; return literal(p, "null");
    default: v->type = JV_NUMBER; return parse_number(p, &v->number);
    }
}

jv_t *jv_parse(const char *text, char *err, size_t err_cap)
{
    char scratch[8];
    parser_t p = {(const unsigned char *)text, 0, err ? err : scratch, err ? err_cap : sizeof scratch, 0};
    p.err[0] = '\0';
    jv_t *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    if (parse_value(&p, v, 0) == 0) {
        skip_ws(&p);
        if (p.s[p.pos] == '\0') return v;
        fail(&p, "text after the value");
    }
    jv_free(v);
    return NULL;
}

static void jv_clear(jv_t *v)
{
    for (size_t i = 0; i < v->count; i++) {
        jv_clear(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
}

void jv_free(jv_t *v)
{
    if (!v) return;
    jv_clear(v);
    free(v);
}

const jv_t *jv_get(const jv_t *object, const char *key)
{
    if (!object || object->type != JV_OBJECT) return NULL;
    for (size_t i = 0; i < object->count; i++)
        if (strcmp(object->keys[i], key) == 0) return &object->items[i];
    return NULL;
}

const jv_t *jv_at(const jv_t *array, size_t index)
{
    return array && array->type == JV_ARRAY && index < array->count ? &array->items[index] : NULL;
}

const char *jv_str(const jv_t *v) { return v && v->type == JV_STRING ? v->string : NULL; }

const jv_t *jv_path(const jv_t *root, const char *path)
{
    char step[128];
    const jv_t *v = root;
    while (v && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof step) return NULL;
        memcpy(step, path, n);
        step[n] = '\0';
        path += n + (path[n] == '.');
        char *end;
        unsigned long i = strtoul(step, &end, 10);
        v = (v->type == JV_ARRAY && *end == '\0' && end != step) ? jv_at(v, i) : jv_get(v, step);
    }
    return v;
}
