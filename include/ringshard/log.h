/* ringshard/log.h - the one logging facility: levels, to stderr. */
#ifndef RINGSHARD_LOG_H
#define RINGSHARD_LOG_H

typedef enum { RS_LOG_ERROR = 0, RS_LOG_WARN, RS_LOG_INFO, RS_LOG_DEBUG } rs_log_level;

/* Messages above this level are dropped. Default RS_LOG_WARN. */
void rs_log_set_level(rs_log_level level);
rs_log_level rs_log_get_level(void);

/* Prints "ringshard: <level>: <message>\n" to stderr if level is enabled.
 * Thread-safe (one fprintf per message). */
void rs_log(rs_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
