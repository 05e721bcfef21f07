/*
 * log: see log.h. The sink is process-wide and set once; log_msg() is safe
 * to call from several threads because each line is written with a single
 * fprintf/syslog call.
 */
#include "common/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *log_ident = "tierflow";
static int log_max = LOG_INFO;
static bool log_syslog;
static bool log_prefixed; /* "<N>" priorities for journald, no time stamp */

static const char *const log_names[] = {
    [LOG_EMERG] = "emerg", [LOG_ALERT] = "alert", [LOG_CRIT] = "crit",
    [LOG_ERR] = "error", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
    [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

bool log_enabled(int level)
{
    return level <= log_max;
}

bool log_stderr_is_journal(void)
{
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    char tail;
    struct stat st;
    if (!js || sscanf(js, "%llu:%llu%c", &dev, &ino, &tail) != 2 || fstat(STDERR_FILENO, &st) < 0)
        return false;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_early_err(const char *prog, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s%s: %s\n", log_stderr_is_journal() ? "<3>" : "", prog, buf);
}

void log_init(const char *ident, int max_level, bool use_syslog, bool journal)
{
    log_ident = ident ? ident : log_ident;
    log_max = max_level;
    log_syslog = use_syslog;
    log_prefixed = !use_syslog && (journal || log_stderr_is_journal());
    if (use_syslog)
        openlog(log_ident, LOG_PID, LOG_DAEMON);
}

int log_level_parse(const char *name)
{
    for (int i = LOG_ERR; i <= LOG_DEBUG; i++)
        if (name && strcmp(name, log_names[i]) == 0)
            return i;
    return -EINVAL;
}

void log_msg(int level, const char *fmt, ...)
{
    if (level > log_max)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (log_syslog) {
        syslog(level, "%s", buf);
        return;
    }
    const char *name = (level >= 0 && level <= LOG_DEBUG) ? log_names[level] : "?";
    if (log_prefixed) {
        fprintf(stderr, "<%d>%s: %s\n", level & LOG_PRIMASK, name, buf);
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    fprintf(stderr, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s: %s\n",
            tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
            tm.tm_sec, ts.tv_nsec / 1000000, log_ident, name, buf);
}
