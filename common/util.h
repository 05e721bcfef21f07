/*
 * util: small helpers every module needs: bounded string copy, strict number
 * parsing with bounds, clocks, and address formatting.
 *
 * All parsers reject trailing garbage, empty strings and out-of-range values
 * and return a negative errno (-EINVAL, -ERANGE) rather than clamping, so
 * that bad input is reported, never silently altered.
 */
#ifndef TF_UTIL_H
#define TF_UTIL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define TF_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Copies at most dstsz-1 bytes and always terminates. Returns strlen(src);
 * a result >= dstsz means the copy was truncated. */
size_t tf_strlcpy(char *dst, const char *src, size_t dstsz);

/* Makes a growable array (*arr, capacity *cap elements of elsz bytes) hold
 * at least need elements, doubling from 64. 0 or -ENOMEM (arr unchanged). */
int tf_grow(void **arr, size_t *cap, size_t need, size_t elsz);

/* A decimal integer: digits only, no sign, no leading zero ("0" itself is
 * fine), no base prefix. */
int tf_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
int tf_parse_double(const char *s, double min, double max, double *out);

/* Seconds as double. */
double tf_now_mono(void);
double tf_now_real(void);
/* Seconds from wall-clock time `now` to the next multiple of `interval`
 * (epoch-aligned), at least min_s: probes on clock-synchronised machines
 * then close their intervals at the same instants, so that one round sees
 * every switch's view of the same interval. interval <= 0 gives min_s. */
double tf_until_boundary(double now, double interval, double min_s);

/* Formats a 4- or 16-byte address (af 4 or 6) into buf (>= 46 bytes). */
const char *tf_addr_str(int af, const uint8_t *addr, char *buf, size_t len);
/* Parses "a.b.c.d" or an IPv6 literal; *af is set to 4 or 6. */
int tf_addr_parse(const char *s, int *af, uint8_t addr[16]);
/* Parses "ADDR/LEN" (or a bare ADDR as a host prefix). */
int tf_prefix_parse(const char *s, int *af, uint8_t addr[16], int *plen);
/* True when addr (of family af) lies in prefix/plen of the same family. */
int tf_prefix_contains(int af, const uint8_t *prefix, int plen, const uint8_t *addr);

/* Formats an error message into err (when err and errlen are set) and
 * returns rc: the one helper behind every "name the offending input" error
 * of the loaders and builders. */
int tf_fail(char *err, size_t errlen, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* A secret (a token file) must be a regular file only its owner may read or
 * change, like sshd's "permissions are too open": 0, or -errno with err
 * saying so ("WHAT PATH: mode 0644 lets group or others read it; chmod 600
 * PATH"). The daemon's token_file and the probe's --token-file both. */
int tf_secret_file_check(const char *what, const char *path, char *err, size_t errlen);

/* Every program's exit status for a usage error (a bad option, a bad
 * option value, a missing or extra argument), as getopt-based tools do. */
#define TF_EXIT_USAGE 2

/* The one wording of "bad value for this option" (iproute2's invarg): prints
 * "PROG: OPT 'VAL': WHY" to stderr (log_early_err) and returns
 * TF_EXIT_USAGE. */
int tf_bad_arg(const char *prog, const char *opt, const char *val, const char *why);

/* Reads a whole small file (bounded by max bytes) into a NUL-terminated
 * malloc'd buffer. -EFBIG when larger than max. */
int tf_read_file(const char *path, size_t max, char **out, size_t *len);
/* Stops a watcher thread that polls the read end of a pipe: one byte into
 * wake_fd (the write end), then join. */
void tf_thread_stop(pthread_t thr, int wake_fd);
/* Reads a secret token from a file, trimming trailing whitespace; the file
 * must hold 1..255 printable characters. */
int tf_read_token(const char *path, char *buf, size_t len);

#endif
