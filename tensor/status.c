#include "tensor/status.h"

#include <gsl/gsl_errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[1024];

const char *ts_strerror(int status) {
    switch (status) {
    case TS_OK: return "ok";
    case TS_ERR_NOMEM: return "out of memory";
    case TS_ERR_ARENA: return "step arena full";
    case TS_ERR_SHAPE: return "shape mismatch";
    case TS_ERR_ARG: return "bad argument";
    case TS_ERR_IO: return "i/o error";
    case TS_ERR_FORMAT: return "malformed input";
    case TS_ERR_NUMERIC: return "non-finite number";
    case TS_ERR_GSL: return "GSL error";
    default: return "unknown error";
    }
}

int ts_fail(int status, const char *fmt, ...) {
    // Format aside first: an argument may be ts_last_error() itself.
    char message[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    memcpy(last_error, message, sizeof last_error);
    return status;
}

const char *ts_last_error(void) { return last_error; }

void ts_clear_error(void) { last_error[0] = '\0'; }

void ts_gsl_quiet(void) { gsl_set_error_handler_off(); }
