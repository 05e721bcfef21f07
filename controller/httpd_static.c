/*
 * httpd_static: see httpd_static.h.
 */
#include "controller/httpd_static.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

#define STATIC_PATH_MAX 256

int httpd_static_path(const char *url, char *rel, size_t rellen, const char **ctype)
{
    static const struct { const char *ext, *type; } types[] = {
        {".html", "text/html; charset=utf-8"}, {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"}, {".css", "text/css; charset=utf-8"},
        {".svg", "image/svg+xml"}, {".png", "image/png"}, {".ico", "image/x-icon"},
        {".json", "application/json"}, {".map", "application/json"}, {".txt", "text/plain; charset=utf-8"},
    };
    if (strcmp(url, "/") == 0)
        url = "/index.html";
    if (url[0] != '/' || strlen(url) >= rellen || strstr(url, "//") || strstr(url, "/."))
        return -ENOENT;
    for (const char *p = url; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/", *p))
            return -ENOENT;
    const char *dot = strrchr(url, '.'), *slash = strrchr(url, '/');
    if (!dot || dot < slash)
        return -ENOENT;
    for (size_t i = 0; i < TF_ARRAY_SIZE(types); i++)
        if (strcmp(dot, types[i].ext) == 0) {
            *ctype = types[i].type;
            tf_strlcpy(rel, url + 1, rellen);
            return 0;
        }
    return -ENOENT;
}

/* Opens rel under root one component at a time, following no symbolic
 * link on the way (O_NOFOLLOW on the last component alone let a linked
 * directory lead out of the web root). The root itself may be a link: it
 * is the operator's setting. O_NONBLOCK: a FIFO must not stall a worker. */
static int open_beneath(const char *root, const char *rel)
{
    char buf[STATIC_PATH_MAX];
    if (tf_strlcpy(buf, rel, sizeof(buf)) >= sizeof(buf))
        return -ENAMETOOLONG;
    int dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    for (char *p = buf;;) {
        char *slash = strchr(p, '/');
        if (slash)
            *slash = '\0';
        int fd = openat(dfd, p, slash ? O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW
                                      : O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        int e = errno;
        close(dfd);
        if (fd < 0)
            return -e;
        if (!slash)
            return fd;
        dfd = fd;
        p = slash + 1;
    }
}

int httpd_static_open(const char *root, const char *url, const char **ctype, uint64_t *size)
{
    char rel[STATIC_PATH_MAX];
    if (httpd_static_path(url, rel, sizeof(rel), ctype) < 0)
        return -ENOENT;
    int fd = open_beneath(root, rel);
    if (fd < 0)
        return fd;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -ENOENT;
    }
    *size = (uint64_t)st.st_size;
    return fd;
}
