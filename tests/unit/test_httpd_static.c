/* httpd_static: the dashboard's path-traversal guard (issue 15). Every way
 * out of the web root a request path could try is refused, plain and
 * percent-encoded (the guard sees libmicrohttpd's decoded path, but a '%'
 * left in it must not pass either), and the legitimate paths are served
 * with their content type. httpd_static_open is tested on a real directory:
 * symbolic links out of the root (to a file, to a directory), a FIFO and a
 * directory are refused, a linked root is the operator's and is followed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "controller/httpd_static.h"

static int path(const char *url, char *rel, size_t len, const char **ctype)
{
    *ctype = NULL;
    return httpd_static_path(url, rel, len, ctype);
}

static void traversal_refused(void **st)
{
    (void)st;
    static const char *const bad[] = {
        /* plain */
        "/../etc/passwd", "/..", "/../", "/../index.html", "/a/../../etc/hosts.txt", "/js/../../x.js",
        "/./index.html", "/js/./app.js", "/...", "/.../x.js",
        /* percent-encoded, in case a layer passed them undecoded */
        "/%2e%2e/etc/passwd.txt", "/%2E%2E%2Fetc%2Fpasswd.txt", "/..%2fetc/hosts.txt", "/..%2F..%2Findex.html",
        "/%2e%2e%2f%2e%2e%2fetc%2fpasswd", "/%252e%252e/x.txt", "/index.html%00.png", "/%00../x.html",
        "/index%2ehtml",
        /* backslashes (a Windows-style separator is no separator here, and no name either) */
        "/..\\..\\etc\\passwd.txt", "/\\etc\\hosts.txt", "/a\\b.js", "/js\\..\\..\\x.js",
        /* absolute or not a path */
        "", "index.html", "etc/passwd.txt", "//etc/passwd.txt", "/js//app.js", "/C:/x.txt", "C:\\x.txt",
        "file:///etc/passwd.txt", "/~root/x.txt",
        /* hidden components */
        "/.git/config.txt", "/.env.txt", "/a/.hidden.js", "/.htaccess",
        /* names and extensions that are not served */
        "/etc/passwd", "/x.php", "/index.html.bak", "/a.b/c", "/a.b/", "/.html", "/x.HTML", "/x.",
        /* other characters */
        "/a b.html", "/x.html?x=1", "/x.html#y", "/x;.html", "/x\n.html", "/\xc3\xa9.html", "/x*.js",
    };
    char rel[256];
    const char *ct;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = path(bad[i], rel, sizeof(rel), &ct);
        if (rc != -ENOENT)
            fail_msg("'%s' was not refused (rc %d, rel '%s')", bad[i], rc, rel);
        assert_null(ct);
    }
}

static void long_names(void **st)
{
    (void)st;
    char url[600], rel[256];
    const char *ct;
    /* 1 + 250 + 5 = 256 bytes: one more than rel holds with its NUL. */
    url[0] = '/';
    memset(url + 1, 'a', 250);
    strcpy(url + 251, ".html");
    assert_int_equal(path(url, rel, sizeof(rel), &ct), -ENOENT);
    /* 255 bytes fit. */
    strcpy(url + 250, ".html");
    assert_int_equal(path(url, rel, sizeof(rel), &ct), 0);
    assert_int_equal(strlen(rel), 254);
    /* Far past any buffer, and deep. */
    memset(url + 1, 'a', 590);
    strcpy(url + 591, ".js");
    assert_int_equal(path(url, rel, sizeof(rel), &ct), -ENOENT);
    for (int i = 0; i < 150; i++)
        memcpy(url + 3 * i, "/..", 3);
    strcpy(url + 450, "/x.js");
    assert_int_equal(path(url, rel, sizeof(rel), &ct), -ENOENT);
    /* A small rel buffer refuses, never truncates into another name. */
    char small[8];
    assert_int_equal(path("/index.html", small, sizeof(small), &ct), -ENOENT);
}

static void served(void **st)
{
    (void)st;
    static const struct { const char *url, *rel, *ctype; } ok[] = {
        {"/", "index.html", "text/html; charset=utf-8"},
        {"/index.html", "index.html", "text/html; charset=utf-8"},
        {"/app.js", "app.js", "text/javascript; charset=utf-8"},
        {"/js/views/flows.mjs", "js/views/flows.mjs", "text/javascript; charset=utf-8"},
        {"/css/site.css", "css/site.css", "text/css; charset=utf-8"},
        {"/img/logo.svg", "img/logo.svg", "image/svg+xml"},
        {"/favicon.ico", "favicon.ico", "image/x-icon"},
        {"/a-b_c.1.json", "a-b_c.1.json", "application/json"},
        {"/app.js.map", "app.js.map", "application/json"},
        {"/robots.txt", "robots.txt", "text/plain; charset=utf-8"},
        {"/x..y.png", "x..y.png", "image/png"}, /* ".." inside a name is a name */
    };
    char rel[256];
    const char *ct;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        if (path(ok[i].url, rel, sizeof(rel), &ct) != 0)
            fail_msg("'%s' was refused", ok[i].url);
        assert_string_equal(rel, ok[i].rel);
        assert_string_equal(ct, ok[i].ctype);
        assert_true(rel[0] != '/');
    }
}

/* A web root with a page, a script in a folder, and beside the root a
 * secret; inside it links to the secret and to its folder, a FIFO and a
 * directory named like a page. */
struct tree {
    char top[64], root[128], link_root[128];
};

static void mk(const char *dir, const char *name, const char *text)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int tree_setup(void **st)
{
    struct tree *t = calloc(1, sizeof(*t));
    char p[256];
    snprintf(t->top, sizeof(t->top), "/tmp/tf_static_XXXXXX");
    assert_non_null(mkdtemp(t->top));
    snprintf(t->root, sizeof(t->root), "%s/web", t->top);
    snprintf(t->link_root, sizeof(t->link_root), "%s/weblink", t->top);
    snprintf(p, sizeof(p), "%s/outside", t->top);
    assert_int_equal(mkdir(t->root, 0755), 0);
    assert_int_equal(mkdir(p, 0755), 0);
    mk(p, "secret.txt", "secret\n");
    mk(t->root, "index.html", "<html></html>\n");
    snprintf(p, sizeof(p), "%s/js", t->root);
    assert_int_equal(mkdir(p, 0755), 0);
    mk(p, "app.js", "export {};\n");
    snprintf(p, sizeof(p), "%s/secret.txt", t->root);
    assert_int_equal(symlink("../outside/secret.txt", p), 0);
    snprintf(p, sizeof(p), "%s/out", t->root);
    assert_int_equal(symlink("../outside", p), 0);
    snprintf(p, sizeof(p), "%s/js/up.js", t->root);
    assert_int_equal(symlink("../index.html", p), 0); /* even inside the root: no link is followed */
    snprintf(p, sizeof(p), "%s/pipe.txt", t->root);
    assert_int_equal(mkfifo(p, 0644), 0);
    snprintf(p, sizeof(p), "%s/dir.html", t->root);
    assert_int_equal(mkdir(p, 0755), 0);
    assert_int_equal(symlink("web", t->link_root), 0);
    *st = t;
    return 0;
}

static int tree_teardown(void **st)
{
    struct tree *t = *st;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->top);
    assert_int_equal(system(cmd), 0);
    free(t);
    return 0;
}

static void opened(const char *root, const char *url, const char *ctype, uint64_t want)
{
    const char *ct = NULL;
    uint64_t size = 0;
    int fd = httpd_static_open(root, url, &ct, &size);
    if (fd < 0)
        fail_msg("%s under %s: refused (%d)", url, root, fd);
    close(fd);
    assert_string_equal(ct, ctype);
    assert_int_equal(size, want);
}

static void open_served(void **st)
{
    struct tree *t = *st;
    opened(t->root, "/", "text/html; charset=utf-8", 14);
    opened(t->root, "/index.html", "text/html; charset=utf-8", 14);
    opened(t->root, "/js/app.js", "text/javascript; charset=utf-8", 11);
    opened(t->link_root, "/index.html", "text/html; charset=utf-8", 14); /* the root may be a link */
}

static void open_refused(void **st)
{
    struct tree *t = *st;
    static const char *const bad[] = {
        "/secret.txt",          /* a link to a file outside */
        "/out/secret.txt",      /* through a link to a directory outside */
        "/js/up.js",            /* a link, even to a file inside */
        "/pipe.txt",            /* a FIFO: refused, and without blocking */
        "/dir.html",            /* a directory */
        "/missing.html",
        "/../outside/secret.txt",
        "/%2e%2e/outside/secret.txt",
        "/..%2foutside%2fsecret.txt",
        "/js/../../outside/secret.txt",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *ct;
        uint64_t size;
        int fd = httpd_static_open(t->root, bad[i], &ct, &size);
        if (fd >= 0) {
            close(fd);
            fail_msg("%s was opened", bad[i]);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(traversal_refused), cmocka_unit_test(long_names), cmocka_unit_test(served),
        cmocka_unit_test_setup_teardown(open_served, tree_setup, tree_teardown),
        cmocka_unit_test_setup_teardown(open_refused, tree_setup, tree_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
