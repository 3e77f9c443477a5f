/* A tiny streaming JSON writer: two-space indentation (or one line per inline container), RFC 8259 string escaping, valid UTF-8 out. */
#include "json_writer.h"

#include <inttypes.h>

void json_init(json_writer_t *w, FILE *out)
{
    *w = (json_writer_t){.out = out};
}

static void newline_indent(json_writer_t *w)
{
    if (w->is_inline[w->depth]) return;
    fputc('\n', w->out);
    for (int i = 0; i < w->depth; i++) fputs("  ", w->out);
}

/* Separator and indentation before a value (or a key) at the current level. */
static int before_value(json_writer_t *w)
{
    if (w->error) return -1;
    if (w->after_key) {
        w->after_key = 0;
        return 0;
    }
    if (w->depth > 0 && w->is_object[w->depth]) {
        w->error = 1; /* a value inside an object needs a key first */
        return -1;
    }
    if (w->depth == 0) {
        if (w->count[0]++) w->error = 1; /* one document, one top-level value */
        return w->error ? -1 : 0;
    }
    if (w->count[w->depth]++) fputs(w->is_inline[w->depth] ? ", " : ",", w->out);
    newline_indent(w);
    return 0;
}

static void begin(json_writer_t *w, char open, int is_object, int is_inline)
{
    if (before_value(w) != 0) return;
    if (w->depth >= JSON_MAX_DEPTH) {
        w->error = 1;
        return;
    }
    fputc(open, w->out);
    w->depth++;
    w->count[w->depth] = 0;
    w->is_object[w->depth] = (char)is_object;
    w->is_inline[w->depth] = (char)(is_inline || w->is_inline[w->depth - 1]);
}

static void end(json_writer_t *w, char close, int is_object)
{
    if (w->error) return;
    if (w->depth == 0 || w->is_object[w->depth] != is_object || w->after_key) {
        w->error = 1;
        return;
    }
    int had_members = w->count[w->depth] > 0 && !w->is_inline[w->depth];
    w->depth--;
    if (had_members) newline_indent(w);
    fputc(close, w->out);
}

void json_begin_object(json_writer_t *w) { begin(w, '{', 1, 0); }
void json_begin_object_inline(json_writer_t *w) { begin(w, '{', 1, 1); }
void json_end_object(json_writer_t *w) { end(w, '}', 1); }
void json_begin_array(json_writer_t *w) { begin(w, '[', 0, 0); }
void json_begin_array_inline(json_writer_t *w) { begin(w, '[', 0, 1); }
void json_end_array(json_writer_t *w) { end(w, ']', 0); }

void json_key(json_writer_t *w, const char *key)
{
    if (w->error) return;
    if (w->depth == 0 || !w->is_object[w->depth] || w->after_key || !key) {
        w->error = 1;
        return;
    }
    if (w->count[w->depth]++) fputs(w->is_inline[w->depth] ? ", " : ",", w->out);
    newline_indent(w);
    json_write_escaped(w->out, key);
    fputs(": ", w->out);
    w->after_key = 1;
}

/* Length of the well-formed UTF-8 sequence at s (RFC 3629), or 0 when the byte there starts none. */
static int utf8_sequence_length(const unsigned char *s)
{
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    int len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;       /* no overlong forms     */
        else if (c == 0xED) hi = 0x9F;  /* no UTF-16 surrogates  */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        else if (c == 0xF4) hi = 0x8F;  /* nothing past U+10FFFF */
    } else return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (int i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return len;
}

void json_write_escaped(FILE *out, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', out);
    while (*s) {
        unsigned char c = *s;
        switch (c) {
        case '"':  fputs("\\\"", out); s++; continue;
        case '\\': fputs("\\\\", out); s++; continue;
        case '\b': fputs("\\b", out); s++; continue;
        case '\f': fputs("\\f", out); s++; continue;
        case '\n': fputs("\\n", out); s++; continue;
        case '\r': fputs("\\r", out); s++; continue;
        case '\t': fputs("\\t", out); s++; continue;
        default: break;
        }
        if (c < 0x20 || c == 0x7F) {
            fprintf(out, "\\u%04x", c);
            s++;
            continue;
        }
        int len = utf8_sequence_length(s);
        if (len == 0) {
            fputs("\\ufffd", out); /* a stray byte: keep the document valid UTF-8 */
            s++;
            continue;
        }
        fwrite(s, 1, (size_t)len, out);
        s += len;
    }
    fputc('"', out);
}

void json_string(json_writer_t *w, const char *s)
{
    if (!s) {
        json_null(w);
        return;
    }
    if (before_value(w) == 0) json_write_escaped(w->out, s);
}

void json_uint(json_writer_t *w, uint64_t v)
{
    if (before_value(w) == 0) fprintf(w->out, "%" PRIu64, v);
}

void json_int(json_writer_t *w, int64_t v)
{
    if (before_value(w) == 0) fprintf(w->out, "%" PRId64, v);
}

void json_bool(json_writer_t *w, int v)
{
    if (before_value(w) == 0) fputs(v ? "true" : "false", w->out);
}

void json_null(json_writer_t *w)
{
    if (before_value(w) == 0) fputs("null", w->out);
}

void json_member_string(json_writer_t *w, const char *key, const char *s)
{
    json_key(w, key);
    json_string(w, s);
}

void json_member_uint(json_writer_t *w, const char *key, uint64_t v)
{
    json_key(w, key);
    json_uint(w, v);
}

void json_member_bool(json_writer_t *w, const char *key, int v)
{
    json_key(w, key);
    json_bool(w, v);
}

int json_finish(json_writer_t *w)
{
    if (w->error || w->depth != 0 || w->after_key || w->count[0] != 1) return -1;
    fputc('\n', w->out);
    return fflush(w->out) == 0 && !ferror(w->out) ? 0 : -1;
}
