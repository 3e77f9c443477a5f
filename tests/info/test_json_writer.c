/* The tools' JSON writer: what it writes parses strictly and round-trips, and misuse is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json_parse.h"
#include "json_writer.h"

typedef struct capture {
    char          *text;
    size_t         len;
    FILE          *out;
    json_writer_t  w;
} capture_t;

static void capture_begin(capture_t *c)
{
    memset(c, 0, sizeof *c);
    c->out = open_memstream(&c->text, &c->len);
    assert_non_null(c->out);
    json_init(&c->w, c->out);
}

/* Finishes the document; returns json_finish's verdict. The text stays in c->text. */
static int capture_end(capture_t *c)
{
    int rc = json_finish(&c->w);
    fclose(c->out);
    return rc;
}

/* Writes `s` as the only value of a one-element array and returns what the strict parser reads back. */
static char *round_trip(const char *s)
{
    capture_t c;
    capture_begin(&c);
    json_begin_array(&c.w);
    json_string(&c.w, s);
    json_end_array(&c.w);
    assert_int_equal(capture_end(&c), 0);
    char why[128];
    jv_t *doc = jv_parse(c.text, why, sizeof why);
    if (!doc) fail_msg("writer output does not parse (%s):\n%s", why, c.text);
    char *back = strdup(jv_str(jv_at(doc, 0)));
    jv_free(doc);
    free(c.text);
    return back;
}

static void test_nested_document_parses_with_every_value_kind(void **state)
{
    (void)state;
    capture_t c;
    capture_begin(&c);
    json_begin_object(&c.w);
    json_key(&c.w, "s");
    json_string(&c.w, "x");
    json_key(&c.w, "n");
    json_uint(&c.w, UINT64_MAX);
    json_key(&c.w, "i");
    json_int(&c.w, INT64_MIN);
    json_key(&c.w, "t");
    json_bool(&c.w, 1);
    json_key(&c.w, "z");
    json_string(&c.w, NULL);
    json_key(&c.w, "empty");
    json_begin_array(&c.w);
    json_end_array(&c.w);
    json_key(&c.w, "inline");
    json_begin_object_inline(&c.w);
    json_key(&c.w, "a");
    json_begin_array(&c.w); /* inside an inline container: inline too */
    json_uint(&c.w, 1);
    json_uint(&c.w, 2);
    json_end_array(&c.w);
    json_end_object(&c.w);
    json_end_object(&c.w);
    assert_int_equal(capture_end(&c), 0);
    assert_non_null(strstr(c.text, "\"inline\": {\"a\": [1, 2]}"));
    jv_t *doc = jv_parse(c.text, NULL, 0);
    assert_non_null(doc);
    assert_string_equal(jv_str(jv_get(doc, "s")), "x");
    assert_int_equal(jv_get(doc, "n")->type, JV_NUMBER);
    assert_true(jv_get(doc, "t")->boolean);
    assert_int_equal(jv_get(doc, "z")->type, JV_NULL);
    assert_int_equal(jv_get(doc, "empty")->count, 0);
    assert_int_equal(jv_path(doc, "inline.a.1")->number, 2);
    jv_free(doc);
    free(c.text);
}

static void test_quotes_backslashes_and_every_control_character_round_trip(void **state)
{
    (void)state;
    char s[64];
    size_t n = 0;
    for (int ch = 1; ch < 0x20; ch++) s[n++] = (char)ch;
    s[n++] = '"';
    s[n++] = '\\';
    s[n++] = '/';
    s[n++] = 0x7f;
    s[n] = '\0';
    char *back = round_trip(s);
    assert_string_equal(back, s);
    free(back);
}

static void test_valid_utf8_passes_through_unchanged(void **state)
{
    (void)state;
    const char *s = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf"; /* é € 😀 U+10FFFF */
    char *back = round_trip(s);
    assert_string_equal(back, s);
    free(back);
}

static void test_invalid_utf8_bytes_become_replacement_characters(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"a\xff" "b", "a\xef\xbf\xbd" "b"},                                     /* never a UTF-8 byte  */
        {"\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"},                               /* overlong '/'        */
        {"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},               /* a UTF-16 surrogate  */
        {"\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* past U+10FFFF */
        {"\xe2\x82", "\xef\xbf\xbd\xef\xbf\xbd"},                               /* cut short at the end */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *back = round_trip(cases[i].in);
        assert_string_equal(back, cases[i].out);
        free(back);
    }
}

static void test_value_without_key_inside_object_is_refused(void **state)
{
    (void)state;
    capture_t c;
    capture_begin(&c);
    json_begin_object(&c.w);
    json_uint(&c.w, 1);
    json_end_object(&c.w);
    assert_int_equal(capture_end(&c), -1);
    free(c.text);
}

static void test_unclosed_container_is_refused(void **state)
{
    (void)state;
    capture_t c;
    capture_begin(&c);
    json_begin_array(&c.w);
    assert_int_equal(capture_end(&c), -1);
    free(c.text);
}

static void test_second_top_level_value_is_refused(void **state)
{
    (void)state;
    capture_t c;
    capture_begin(&c);
    json_null(&c.w);
    json_null(&c.w);
    assert_int_equal(capture_end(&c), -1);
    free(c.text);
}

static void test_mismatched_close_is_refused(void **state)
{
    (void)state;
    capture_t c;
    capture_begin(&c);
    json_begin_array(&c.w);
    json_end_object(&c.w);
    assert_int_equal(capture_end(&c), -1);
    free(c.text);
}

/* The checker checks too: the strict parser must refuse what a lenient one would accept. */
static void test_strict_parser_refuses_malformed_documents(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "", "[1,]", "{\"a\":1,}", "[\"a\tb\"]" /* raw tab */, "[\"\\x\"]", "[\"\xff\"]", "{\"a\":1,\"a\":2}",
        "[\"\\ud800\"]", "[01]", "[1.]", "[-]", "nul", "[1] 2", "{\"a\" 1}", "[\"open",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        jv_t *doc = jv_parse(bad[i], NULL, 0);
        if (doc) fail_msg("the strict parser accepted malformed JSON: %s", bad[i]);
    }
    jv_t *good = jv_parse(" {\"a\": [1, -2.5e+3, true, false, null, \"\\u00e9\\ud83d\\ude00\\/\"]} ", NULL, 0);
    assert_non_null(good);
    assert_string_equal(jv_str(jv_path(good, "a.5")), "\xc3\xa9\xf0\x9f\x98\x80/");
    jv_free(good);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nested_document_parses_with_every_value_kind),
        cmocka_unit_test(test_quotes_backslashes_and_every_control_character_round_trip),
        cmocka_unit_test(test_valid_utf8_passes_through_unchanged),
        cmocka_unit_test(test_invalid_utf8_bytes_become_replacement_characters),
        cmocka_unit_test(test_value_without_key_inside_object_is_refused),
        cmocka_unit_test(test_unclosed_container_is_refused),
        cmocka_unit_test(test_second_top_level_value_is_refused),
        cmocka_unit_test(test_mismatched_close_is_refused),
        cmocka_unit_test(test_strict_parser_refuses_malformed_documents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
