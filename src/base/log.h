/* log — diagnostics on stderr. stdout belongs to the protocol and is never
 * written here. The level is checked before the arguments are evaluated;
 * every line passes base/secret's masker before it is written. */
#ifndef RETRYD_LOG_H
#define RETRYD_LOG_H

#include <stddef.h>
#include <stdint.h>

struct jsontext_buf; /* base/jsontext.h */

enum log_level {
	LOG_LEVEL_NONE = 0,
	LOG_LEVEL_ERROR,
	LOG_LEVEL_WARN,
	LOG_LEVEL_INFO,
	LOG_LEVEL_DEBUG,
};

extern enum log_level log_level;

/* Reads RETRYD_LOG (error|warn|info|debug|none; default warn) and
 * RETRYD_LOG_FORMAT: "text" (default) writes "retryd: <level>: <msg>",
 * "json" one object per line (log_json_line). Any other format value is
 * warned about once and text is kept. */
void log_init_from_env(void);
/* Appends one JSON log line, newline included, to out:
 * {"ts":"<ISO-8601 UTC with ms>","level":level,"msg":msg[0..len)}.
 * msg (borrowed, already masked) that is not well-formed UTF-8 has its bad
 * bytes written as '?'. Pure. Returns 0, or -1 (out->len unchanged) when
 * memory ran out. */
int log_json_line(struct jsontext_buf *out, int64_t epoch_ms, const char *level,
		  const char *msg, size_t len);
void log_write(const char *level, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;

#define LOG_AT(lvl, name, ...) \
	do { if (log_level >= (lvl)) log_write((name), __VA_ARGS__); } while (0)
#define LOG_ERROR(...) LOG_AT(LOG_LEVEL_ERROR, "error", __VA_ARGS__)
#define LOG_WARN(...)  LOG_AT(LOG_LEVEL_WARN, "warn", __VA_ARGS__)
#define LOG_INFO(...)  LOG_AT(LOG_LEVEL_INFO, "info", __VA_ARGS__)
#define LOG_DEBUG(...) LOG_AT(LOG_LEVEL_DEBUG, "debug", __VA_ARGS__)

#endif
