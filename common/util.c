/*
 * util: see util.h.
 */
#include "common/util.h"

#include "common/log.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

size_t tf_strlcpy(char *dst, const char *src, size_t dstsz)
{
    size_t n = strlen(src);
    if (dstsz) {
        size_t c = n < dstsz - 1 ? n : dstsz - 1;
        memcpy(dst, src, c);
        dst[c] = '\0';
    }
    return n;
}

int tf_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    /* Decimal digits only: strtoull's base 0 read "010" as 8 and "0x10" as
     * 16, so a prefix "/024" was a /20. A leading zero is refused rather
     * than guessed at. */
    if (!s || !*s || (s[0] == '0' && s[1]))
        return -EINVAL;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9')
            return -EINVAL;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE || v < min || v > max)
        return -ERANGE;
    *out = v;
    return 0;
}

int tf_parse_double(const char *s, double min, double max, double *out)
{
    if (!s || !*s || isspace((unsigned char)*s))
        return -EINVAL;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end != '\0' || isnan(v))
        return -EINVAL;
    if (errno == ERANGE || v < min || v > max)
        return -ERANGE;
    *out = v;
    return 0;
}

static double ts_of(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double tf_now_mono(void) { return ts_of(CLOCK_MONOTONIC); }
double tf_now_real(void) { return ts_of(CLOCK_REALTIME); }

double tf_until_boundary(double now, double interval, double min_s)
{
    if (!(interval > 0) || !(now >= 0))
        return min_s;
    double w = interval - fmod(now, interval);
    if (w < min_s)
        w += ceil((min_s - w) / interval) * interval;
    return w;
}

const char *tf_addr_str(int af, const uint8_t *addr, char *buf, size_t len)
{
    if (!inet_ntop(af == 6 ? AF_INET6 : AF_INET, addr, buf, (socklen_t)len))
        tf_strlcpy(buf, "?", len);
    return buf;
}

int tf_addr_parse(const char *s, int *af, uint8_t addr[16])
{
    memset(addr, 0, 16);
    if (s && inet_pton(AF_INET, s, addr) == 1) {
        *af = 4;
        return 0;
    }
    if (s && inet_pton(AF_INET6, s, addr) == 1) {
        *af = 6;
        return 0;
    }
    return -EINVAL;
}

int tf_prefix_parse(const char *s, int *af, uint8_t addr[16], int *plen)
{
    char buf[64];
    if (!s || tf_strlcpy(buf, s, sizeof(buf)) >= sizeof(buf))
        return -EINVAL;
    char *slash = strchr(buf, '/');
    if (slash)
        *slash = '\0';
    int r = tf_addr_parse(buf, af, addr);
    if (r < 0)
        return r;
    int maxlen = *af == 4 ? 32 : 128;
    if (!slash) {
        *plen = maxlen;
        return 0;
    }
    uint64_t v;
    if (tf_parse_u64(slash + 1, 0, (uint64_t)maxlen, &v) < 0)
        return -EINVAL;
    *plen = (int)v;
    return 0;
}

int tf_prefix_contains(int af, const uint8_t *prefix, int plen, const uint8_t *addr)
{
    int full = plen / 8, rest = plen % 8;
    int maxb = af == 4 ? 4 : 16;
    if (full > maxb || (full == maxb && rest))
        return 0;
    if (memcmp(prefix, addr, (size_t)full) != 0)
        return 0;
    if (rest) {
        uint8_t mask = (uint8_t)(0xff << (8 - rest));
        if ((prefix[full] & mask) != (addr[full] & mask))
            return 0;
    }
    return 1;
}

int tf_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

int tf_bad_arg(const char *prog, const char *opt, const char *val, const char *why)
{
    log_early_err(prog, "%s '%s': %s", opt, val, why);
    return TF_EXIT_USAGE;
}

int tf_read_file(const char *path, size_t max, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -errno;
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size > max) {
        fclose(f);
        return -EFBIG;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        fclose(f);
        return -ENOMEM;
    }
    for (;;) {
        if (n == cap) {
            if (cap >= max + 1) {
                free(buf);
                fclose(f);
                return -EFBIG;
            }
            cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                free(buf);
                fclose(f);
                return -ENOMEM;
            }
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    int err = ferror(f) ? -EIO : 0;
    fclose(f);
    if (err || n > max) {
        free(buf);
        return err ? err : -EFBIG;
    }
    buf[n] = '\0';
    *out = buf;
    if (len)
        *len = n;
    return 0;
}

int tf_secret_file_check(const char *what, const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        int e = errno;
        snprintf(err, errlen, "%s %s: %s", what, path, strerror(e));
        return -e;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s %s: not a regular file", what, path);
        return -EINVAL;
    }
    if (st.st_mode & 077) {
        snprintf(err, errlen, "%s %s: mode %04o lets group or others %s it; chmod 600 %s", what, path,
                 (unsigned)(st.st_mode & 07777), st.st_mode & 022 ? "change" : "read", path);
        return -EPERM;
    }
    return 0;
}

int tf_read_token(const char *path, char *buf, size_t len)
{
    char *data;
    size_t n;
    int r = tf_read_file(path, 4096, &data, &n);
    if (r < 0)
        return r;
    while (n && isspace((unsigned char)data[n - 1]))
        data[--n] = '\0';
    int ok = n > 0 && n < len && n < 256;
    for (size_t i = 0; ok && i < n; i++)
        ok = isgraph((unsigned char)data[i]);
    if (ok)
        memcpy(buf, data, n + 1);
    free(data);
    return ok ? 0 : -EINVAL;
}

int tf_grow(void **arr, size_t *cap, size_t need, size_t elsz)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 64;
    while (ncap < need)
        ncap *= 2;
    if (ncap > SIZE_MAX / elsz)
        return -ENOMEM;
    void *n = realloc(*arr, ncap * elsz);
    if (!n)
        return -ENOMEM;
    *arr = n;
    *cap = ncap;
    return 0;
}

void tf_thread_stop(pthread_t thr, int wake_fd)
{
    ssize_t w = write(wake_fd, "x", 1);
    (void)w;   /* a full pipe wakes the thread as well */
    pthread_join(thr, NULL);
}
