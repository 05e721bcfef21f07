/* common/log: on stderr, "<N>" syslog priorities (what journald files a line
 * under) when JOURNAL_STREAM names stderr or when asked; the plain
 * time-stamped line otherwise; a stream JOURNAL_STREAM does not name (a
 * child's stderr redirected elsewhere) or a malformed value gets no prefix;
 * an error before log_init (log_early_err) reads "PROG: MESSAGE", with the
 * error priority in front on the journal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"

/* stderr goes to a temporary file for each test; the saved descriptor
 * brings it back so that cmocka's own failures stay visible. */
struct cap {
    FILE *f;
    int saved;
};

static int cap_setup(void **st)
{
    static struct cap c;
    fflush(stderr);
    c.f = tmpfile();
    c.saved = dup(STDERR_FILENO);
    if (!c.f || c.saved < 0 || dup2(fileno(c.f), STDERR_FILENO) < 0)
        return -1;
    unsetenv("JOURNAL_STREAM");
    *st = &c;
    return 0;
}

static int cap_teardown(void **st)
{
    struct cap *c = *st;
    fflush(stderr);
    dup2(c->saved, STDERR_FILENO);
    close(c->saved);
    fclose(c->f);
    unsetenv("JOURNAL_STREAM");
    log_init("test_log", LOG_INFO, false, false);
    return 0;
}

/* What was written to stderr since the setup. */
static const char *captured(struct cap *c)
{
    static char buf[4096];
    fflush(stderr);
    size_t n = (size_t)pread(fileno(c->f), buf, sizeof(buf) - 1, 0);
    buf[n < sizeof(buf) ? n : 0] = '\0';
    return buf;
}

static void set_stream_of_stderr(long long dev_delta)
{
    struct stat s;
    assert_int_equal(fstat(STDERR_FILENO, &s), 0);
    char v[64];
    snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)s.st_dev + (unsigned long long)dev_delta,
             (unsigned long long)s.st_ino);
    setenv("JOURNAL_STREAM", v, 1);
}

static void plain_stderr_has_time_ident_level(void **st)
{
    log_init("tfx", LOG_INFO, false, false);
    assert_false(log_stderr_is_journal());
    log_warn("disk %s full", "sda");
    const char *out = captured(*st);
    assert_null(strchr(out, '<'));
    assert_non_null(strstr(out, "Z tfx warning: disk sda full\n"));
    assert_true(out[0] >= '1' && out[0] <= '9'); /* the year */
}

static void journal_stream_on_stderr_gets_priorities(void **st)
{
    set_stream_of_stderr(0);
    assert_true(log_stderr_is_journal());
    log_init("tfx", LOG_DEBUG, false, false);
    log_err("e");
    log_warn("w");
    log_msg(LOG_NOTICE, "n");
    log_info("i");
    log_debug("d");
    assert_string_equal(captured(*st), "<3>error: e\n<4>warning: w\n<5>notice: n\n<6>info: i\n<7>debug: d\n");
}

static void level_filter_still_applies(void **st)
{
    set_stream_of_stderr(0);
    log_init("tfx", LOG_WARNING, false, false);
    log_info("not written");
    log_warn("written");
    assert_string_equal(captured(*st), "<4>warning: written\n");
}

static void another_stream_gets_no_prefix(void **st)
{
    set_stream_of_stderr(1);
    assert_false(log_stderr_is_journal());
    log_init("tfx", LOG_INFO, false, false);
    log_warn("x");
    assert_null(strstr(captured(*st), "<4>"));
}

static void malformed_journal_stream_is_ignored(void **st)
{
    static const char *const bad[] = {"", "12", "12:", ":34", "12:34x", "a:b", "12;34"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("JOURNAL_STREAM", bad[i], 1);
        assert_false(log_stderr_is_journal());
    }
    log_init("tfx", LOG_INFO, false, false);
    log_warn("x");
    assert_null(strstr(captured(*st), "<4>"));
}

static void asked_for_prefixes_without_journal(void **st)
{
    log_init("tfx", LOG_INFO, false, true);
    log_warn("asked");
    assert_string_equal(captured(*st), "<4>warning: asked\n");
}

static void early_errors_get_the_error_priority_on_the_journal(void **st)
{
    log_early_err("tfx", "--set %s: expected KEY=VALUE", "a");
    set_stream_of_stderr(0);
    log_early_err("tfx", "bad %d", 7);
    assert_string_equal(captured(*st), "tfx: --set a: expected KEY=VALUE\n<3>tfx: bad 7\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(plain_stderr_has_time_ident_level, cap_setup, cap_teardown),
        cmocka_unit_test_setup_teardown(journal_stream_on_stderr_gets_priorities, cap_setup, cap_teardown),
        cmocka_unit_test_setup_teardown(level_filter_still_applies, cap_setup, cap_teardown),
        cmocka_unit_test_setup_teardown(another_stream_gets_no_prefix, cap_setup, cap_teardown),
        cmocka_unit_test_setup_teardown(malformed_journal_stream_is_ignored, cap_setup, cap_teardown),
        cmocka_unit_test_setup_teardown(asked_for_prefixes_without_journal, cap_setup, cap_teardown),
        cmocka_unit_test_setup_teardown(early_errors_get_the_error_priority_on_the_journal, cap_setup,
                                        cap_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
