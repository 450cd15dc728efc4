/* fsutil — file-system helpers that know no daemon type. */
#ifndef RETRYD_FSUTIL_H
#define RETRYD_FSUTIL_H

/* "$<xdg_var><tail>" when that variable holds an absolute path (as the XDG
 * spec says), else "$HOME/<home_dir><tail>", else NULL: a new string the
 * caller frees (NULL too when memory ran out).
 * fsutil_xdg_path("XDG_STATE_HOME", ".local/state", "/retryd/sessions"). */
char *fsutil_xdg_path(const char *xdg_var, const char *home_dir, const char *tail);

#endif
