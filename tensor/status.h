// Status codes and error messages shared by every tinyseq library.
//
// Library functions that can fail return an int status (TS_OK = 0, negative
// on error) or NULL, and leave a human-readable message naming the file, the
// line or the tensor in a per-thread buffer read with ts_last_error(). Only the
// program in cli/ prints messages and turns statuses into exit codes.
#ifndef TS_STATUS_H
#define TS_STATUS_H

enum ts_status {
    TS_OK = 0,
    TS_ERR_NOMEM = -1,   // malloc failed, or a size would overflow
    TS_ERR_ARENA = -2,   // the step arena is full
    TS_ERR_SHAPE = -3,   // tensor shapes do not fit the operation
    TS_ERR_ARG = -4,     // a bad argument or option value
    TS_ERR_IO = -5,      // open/read/write/fsync/rename failed
    TS_ERR_FORMAT = -6,  // malformed input: corpus line, checkpoint, UTF-8
    TS_ERR_NUMERIC = -7, // NaN or Inf where a finite number is required
    TS_ERR_GSL = -8,     // a GSL call returned an error
};

// The fixed name of a status ("shape mismatch"); never NULL.
const char *ts_strerror(int status);

// Records a printf-style message for this thread and returns `status`, so a
// failing function can `return ts_fail(TS_ERR_SHAPE, "...", ...);`. An
// argument may be ts_last_error() itself (to prefix the current message).
int ts_fail(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

// The message of this thread's most recent ts_fail(), or "" if none.
// The pointer stays valid until the next ts_fail() on the same thread.
const char *ts_last_error(void);

// Clears this thread's message.
void ts_clear_error(void);

// Turns off GSL's default handler (which calls abort()), so that GSL errors
// come back as return codes. Called by every entry point that uses GSL;
// idempotent.
void ts_gsl_quiet(void);

#endif
