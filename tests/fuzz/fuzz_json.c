// libFuzzer harness for viz/json.h alone: the strict JSON reader that
// `tinyseq report` passes every attention.jsonl line through before the
// line's bytes reach the page (issue 38). fuzz_report reaches it behind the
// report's CSV files; here every input is one line.
//
// Beyond "no crash, no leak, no sanitizer report":
//   - a failure is TS_ERR_FORMAT or TS_ERR_NOMEM with a message, and the
//     check alone (out NULL) fails alike;
//   - an accepted input held no NUL (a raw one is a control character, an
//     escaped one is refused) and its copy is an object: '{' ... '}', no
//     whitespace, no '<', '>', '&' or control bytes (nothing that could end
//     or hide the page's script), nested at most TS_JSON_MAX_DEPTH deep;
//   - the copy reads back to the very same bytes (a fixed point).
#include "tensor/status.h"
#include "viz/json.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// text[0..n) copied by ts_json_copy_object into *copy (malloc'd); its status.
static int copy_object(const char *text, size_t n, char **copy, size_t *copy_len) {
    *copy = NULL;
    *copy_len = 0;
    FILE *f = open_memstream(copy, copy_len);
    if (!f) __builtin_trap();
    int rc = ts_json_copy_object(f, text, n);
    fclose(f);
    return rc;
}

// The deepest nesting of copy's brackets outside its strings.
static int depth_of(const char *copy, size_t n) {
    int depth = 0, most = 0, in_string = 0;
    for (size_t i = 0; i < n; i++) {
        char c = copy[i];
        if (in_string) {
            if (c == '\\') i++;
            else if (c == '"') in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '{' || c == '[') {
            if (++depth > most) most = depth;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return in_string || depth != 0 ? -1 : most;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > (1u << 16)) return 0;
    const char *text = (const char *)data;
    char *copy;
    size_t copy_len;
    int rc = copy_object(text, size, &copy, &copy_len);
    if (ts_json_copy_object(NULL, text, size) != rc) __builtin_trap();
    if (rc != TS_OK) {
        if ((rc != TS_ERR_FORMAT && rc != TS_ERR_NOMEM) || ts_last_error()[0] == '\0') __builtin_trap();
    } else {
        if (memchr(text, '\0', size)) __builtin_trap();
        if (copy_len < 2 || copy[0] != '{' || copy[copy_len - 1] != '}') __builtin_trap();
        for (size_t i = 0; i < copy_len; i++) {
            unsigned char c = (unsigned char)copy[i];
            if (c < 0x20 || c == '<' || c == '>' || c == '&') __builtin_trap();
        }
        int depth = depth_of(copy, copy_len);
        if (depth < 1 || depth > TS_JSON_MAX_DEPTH) __builtin_trap();
        char *again;
        size_t again_len;
        if (copy_object(copy, copy_len, &again, &again_len) != TS_OK) __builtin_trap();
        if (again_len != copy_len || memcmp(again, copy, copy_len)) __builtin_trap();
        free(again);
    }
    free(copy);
    return 0;
}
