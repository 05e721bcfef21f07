/*
 * httpd_static: the dashboard's files, the one place a request path becomes
 * a file name, so that no request opens a file outside the web root.
 *
 * Two fences, each enough alone for what it guards against. The path
 * (httpd_static_path): the decoded URL path is restricted to
 * [A-Za-z0-9._-/], starts with '/', holds no "//", no component that
 * starts with '.' (so no "..", no hidden file) and ends in a known
 * extension, which gives the content type; anything else (a '%' left
 * after decoding, a backslash, a space) is -ENOENT. The opening (httpd_static_open): the relative path
 * is opened under the root one component at a time with O_NOFOLLOW, so a
 * symbolic link inside the root (to a directory or a file) leads nowhere;
 * only regular files are served, and a FIFO does not block (O_NONBLOCK).
 * The root itself may be a link: it is the operator's setting.
 */
#ifndef TF_HTTPD_STATIC_H
#define TF_HTTPD_STATIC_H

#include <stddef.h>
#include <stdint.h>

/* 0 when url (a decoded path, "/" meaning "/index.html") is safe to open
 * under the web root: rel is it without the leading '/', *ctype its
 * content type. -ENOENT otherwise, or when it does not fit rellen. */
int httpd_static_path(const char *url, char *rel, size_t rellen, const char **ctype);
/* The file url names under root, checked by httpd_static_path and opened
 * through no symbolic link: its descriptor (the caller closes it), with its
 * content type and size; a negative errno when it is refused, absent or
 * not a regular file. */
int httpd_static_open(const char *root, const char *url, const char **ctype, uint64_t *size);

#endif
