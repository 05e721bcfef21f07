/*
 * log: levelled logging to stderr or syslog, shared by every program.
 *
 * One process-wide sink, chosen once at start by log_init(); until then
 * messages go to stderr at LOG_INFO. Messages are single lines; callers name
 * the offending input in the message so that an operator can act on it.
 */
#ifndef TF_LOG_H
#define TF_LOG_H

#include <stdbool.h>
#include <syslog.h>

/* Levels are syslog's (LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG). */
void log_init(const char *ident, int max_level, bool use_syslog);
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
