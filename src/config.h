/* config — the settings a command line makes: the built-ins, the settings
 * file (an explicit --settings must name one that exists), every --set in
 * order, --sim-plan; and what is checked and compiled from them. The
 * daemon and --classify load them; `retryd config` prints them and
 * `retryd config --check FILE` checks a file. The int functions say what
 * went wrong on stderr and return an exit status (0 or 1); every argument
 * is borrowed unless said otherwise. */
#ifndef RETRYD_CONFIG_H
#define RETRYD_CONFIG_H

#include <stddef.h>

struct classify;
struct settings;

/* The daemon's settings into *settings (path: --settings, or NULL for the
 * default path; sets: nsets KEY=VALUE texts; sim_plan: --sim-plan's JSON,
 * or NULL), the sim plan checked, and the classifier compiled from retry.*:
 * on 0, *classify is new and the caller's (classify_free). *settings may
 * hold a partial load on failure too: the caller settings_release()s it
 * either way. */
int config_load(struct settings *settings, struct classify **classify, const char *path,
		const char *const *sets, size_t nsets, const char *sim_plan);
/* --classify: the verdict of classifier (borrowed) on text, as
 * classify_error gives it, on stdout as one JSON line. */
int config_classify(struct classify *classify, const char *text);
/* At the start: a warning (logged) naming where retry.enabled false comes
 * from, when it does. */
void config_warn_if_retries_off(const struct settings *s);
/* `retryd config`: the effective settings on stdout, one leaf key per line
 * as ORIGIN<TAB>KEY=JSON, secrets masked. */
int config_print(const char *path, const char *const *sets, size_t nsets);
/* `retryd config --check FILE`: "FILE: ok" on stdout, else every problem
 * on stderr, one per line, and 1. */
int config_check(const char *path);

#endif
