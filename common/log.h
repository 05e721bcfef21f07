/*
 * log: levelled logging to stderr or syslog, shared by every program.
 *
 * One process-wide sink, chosen once at start by log_init(); until then
 * messages go to stderr at LOG_INFO. Messages are single lines; callers name
 * the offending input in the message so that an operator can act on it.
 *
 * On stderr a line is "TIME IDENT LEVEL: MESSAGE", except when stderr is the
 * journal (systemd sets JOURNAL_STREAM to its device:inode) or when asked:
 * then it is "<N>LEVEL: MESSAGE", N the syslog priority, which journald
 * strips and files as the entry's priority (sd-daemon(3)); the journal
 * stamps time and identifier itself. Without the prefix journald files
 * every line at the unit's default priority, a warning as info.
 */
#ifndef TF_LOG_H
#define TF_LOG_H

#include <stdbool.h>
#include <syslog.h>

/* Levels are syslog's (LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG). */
/* journal: prefix stderr lines with <N> even when JOURNAL_STREAM does not
 * name stderr (stderr piped to a journald-style collector). */
void log_init(const char *ident, int max_level, bool use_syslog, bool journal);
/* Whether stderr is the stream JOURNAL_STREAM names ("DEV:INODE"). */
bool log_stderr_is_journal(void);
/* An error before, or without, log_init (a bad option, a configuration a
 * daemon refuses at start): "PROG: MESSAGE" on stderr, as command-line
 * tools word them, with the error priority "<3>" in front when stderr is
 * the journal, so that the reason a unit failed to start is filed as an
 * error. */
void log_early_err(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parses "error|warning|notice|info|debug"; returns the level or -EINVAL. */
int log_level_parse(const char *name);
void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether a message of level would be written (to skip building it). */
bool log_enabled(int level);

#define log_err(...)   log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARNING, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
