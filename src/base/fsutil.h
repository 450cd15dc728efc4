/* fsutil — file-system helpers that know no daemon type. */
#ifndef RETRYD_FSUTIL_H
#define RETRYD_FSUTIL_H

/* "$<xdg_var><tail>" when that variable holds an absolute path (as the XDG
 * spec says), else "$HOME/<home_dir><tail>", else NULL: a new string the
 * caller frees (NULL too when memory ran out).
 * fsutil_xdg_path("XDG_STATE_HOME", ".local/state", "/retryd/sessions"). */
char *fsutil_xdg_path(const char *xdg_var, const char *home_dir, const char *tail);

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

#endif
