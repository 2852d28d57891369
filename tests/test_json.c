// viz/json.h: strict JSON read and written back, one object per call.
#include "tensor/status.h"
#include "viz/json.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

TestSuite(json);

// in[0..len) through ts_json_copy_object into a malloc'd string; *rc its status.
static char *copied(const char *in, size_t len, int *rc) {
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    *rc = ts_json_copy_object(f, in, len);
    fclose(f);
    return text;
}

Test(json, objects_are_written_back_from_what_was_parsed) {
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"{}", "{}"},
        {" \t{ \"a\" : [ 1 , -0.5e+3, 2E-2 , true,false , null ] }\r\n", "{\"a\":[1,-0.5e+3,2E-2,true,false,null]}"},
        {"{\"s\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"}", "{\"s\":\"\\\"\\\\/\\u0008\\u000c\\u000a\\u000d\\u0009\"}"},
        {"{\"</script>\":\"<!--&>\"}", "{\"\\u003c/script\\u003e\":\"\\u003c!--\\u0026\\u003e\"}"},
        {"{\"u\":\"\\u00e9\\ud83d\\ude00\xe2\x96\x81\"}", "{\"u\":\"\xc3\xa9\xf0\x9f\x98\x80\xe2\x96\x81\"}"},
        {"{\"n\":[[],{}, {\"x\":{}}]}", "{\"n\":[[],{},{\"x\":{}}]}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc;
        char *got = copied(cases[i].in, strlen(cases[i].in), &rc);
        cr_assert_eq(rc, TS_OK, "case %zu: %s", i, ts_last_error());
        cr_assert_str_eq(got, cases[i].out, "case %zu", i);
        free(got);
        cr_assert_eq(ts_json_copy_object(NULL, cases[i].in, strlen(cases[i].in)), TS_OK, "case %zu checked only", i);
    }
}

Test(json, anything_else_is_refused_saying_where) {
    static const struct {
        const char *in;
        size_t len;
        const char *says;
    } cases[] = {
        {"", 0, "byte 1: not a JSON object"},
        {"[1]", 0, "not a JSON object"},
        {"{\"a\":1}{\"b\":2}", 0, "byte 8: bytes after the object"},
        {"{\"a\":1},alert(1),{\"b\":2}", 0, "byte 8: bytes after the object"},
        {"{\"a\":NaN}", 0, "byte 6: not a JSON value"},
        {"{\"a\":Infinity}", 0, "not a JSON value"},
        {"{\"a\":1e999}", 0, "too large"},
        {"{\"a\":01}", 0, "byte 7: no ','"},
        {"{\"a\":1.}", 0, "no digit after its point"},
        {"{\"a\":1e}", 0, "no digit in its exponent"},
        {"{\"a\":-}", 0, "not a JSON value"},
        {"{\"a\":1,}", 0, "an object's key is not a string"},
        {"{\"a\":[1,]}", 0, "not a JSON value"},
        {"{'a':1}", 0, "an object's key is not a string"},
        {"{\"a\" 1}", 0, "no ':'"},
        {"{\"a\":tru}", 0, "not a JSON value"},
        {"{\"a\":\"x}", 0, "not closed"},
        {"{\"a\":\"\x01\"}", 0, "a control character"},
        {"{\"a\":\"\xff\"}", 0, "invalid UTF-8"},
        {"{\"a\":\"\xed\xa0\x80\"}", 0, "invalid UTF-8"},
        {"{\"a\":\"\\x41\"}", 0, "an escape JSON does not have"},
        {"{\"a\":\"\\u12\"}", 0, "four hex digits"},
        {"{\"a\":\"\\ud800\"}", 0, "surrogate"},
        {"{\"a\":\"\\udc00\\ud800\"}", 0, "surrogate"},
        {"{\"a\":\"\\u0000\"}", 0, "\\u0000"},
        {"{\"a\":1}\0{}", 10, "byte 8: bytes after the object"},
        {"{\"a\":\"x\0y\"}", 11, "a control character"},
        {"{\"a\":1 /* c */}", 0, "no ','"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t len = cases[i].len ? cases[i].len : strlen(cases[i].in);
        cr_assert_eq(ts_json_copy_object(NULL, cases[i].in, len), TS_ERR_FORMAT, "case %zu: '%s' accepted", i, cases[i].in);
        cr_assert(strstr(ts_last_error(), cases[i].says), "case %zu: '%s' does not say '%s'", i, ts_last_error(),
                  cases[i].says);
    }
}

// Nesting: 64 levels are read, 65 refused, and neither recurses without bound.
Test(json, nesting_is_bounded) {
    char text[2 * 70 + 8];
    for (int depth = 63; depth <= 65; depth++) {
        size_t n = 0;
        text[n++] = '{';
        text[n++] = '"';
        text[n++] = 'a';
        text[n++] = '"';
        text[n++] = ':';
        for (int k = 1; k < depth; k++) text[n++] = '[';
        for (int k = 1; k < depth; k++) text[n++] = ']';
        text[n++] = '}';
        int rc = ts_json_copy_object(NULL, text, n);
        cr_assert_eq(rc, depth <= TS_JSON_MAX_DEPTH ? TS_OK : TS_ERR_FORMAT, "depth %d: %s", depth, ts_last_error());
    }
}
