/* fsutil — file-system helpers that know no daemon type. */
#ifndef RETRYD_FSUTIL_H
#define RETRYD_FSUTIL_H

/* "$<xdg_var><tail>" when that variable holds an absolute path (as the XDG
 * spec says), else "$HOME/<home_dir><tail>", else NULL: a new string the
 * caller frees (NULL too when memory ran out).
 * fsutil_xdg_path("XDG_STATE_HOME", ".local/state", "/retryd/sessions"). */
char *fsutil_xdg_path(const char *xdg_var, const char *home_dir, const char *tail);

#include <stdbool.h>
#include <stddef.h>

/* printf into out[0..cap): 0, or -1 when the text does not fit (out then
 * holds "", never a cut path that names another file). */
int fsutil_format(char *out, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 3, 4)))
#endif
	;

/* read(2) of fd until len bytes came, the end of the file or an error
 * (EINTR is read again): how many bytes came. */
size_t fsutil_read_full(int fd, void *buf, size_t len);

struct stat;

/* Whether a file this process opened (st: its fstat) may be used as one of
 * its own: a regular file that belongs to the effective user, or to root
 * when root_ok (a file only root could have written, such as one in /etc).
 * Another user's file is refused because what it says is acted on (a
 * settings file names the commands to run, a session file is a
 * conversation sent upstream) and what is appended to it is theirs to read.
 * 0, or -1 with why in why[0..cap): "is a FIFO, not a regular file",
 * "belongs to uid 65534, not to you (uid 0)". */
int fsutil_judge_own_file(const struct stat *st, bool root_ok, char *why, size_t cap);

#endif
