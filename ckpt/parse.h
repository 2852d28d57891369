// Internal to ckpt/: the bounded parser of a checkpoint's payload (parse.c),
// which the loader (read.c) hands a file's bytes to, mapped or inflated.
#ifndef TS_CKPT_PARSE_H
#define TS_CKPT_PARSE_H

#include "ckpt/ckpt.h"

#include <stddef.h>

// Parses a complete payload p[0..total) (its prelude already checked) into a
// new container, *out. A version-2 payload's tensors point into p, which the
// caller then keeps alive as the container's storage. Each section's CRC is
// checked before its body is parsed, so damage is reported by section; the
// payload CRC comes last, then gzip's (gzip_trailer: NULL for an
// uncompressed file). With skip_training the optimizer section is checked,
// not parsed. TS_ERR_FORMAT naming `what` (the path, or "<memory>"), or
// TS_ERR_NOMEM; *out is left alone on failure.
int ts_ckpt_parse_payload(const unsigned char *p, size_t total, const char *what, int skip_training,
                          const unsigned char gzip_trailer[8], ts_ckpt **out);

#endif
