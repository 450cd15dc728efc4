/* fleet_script — src/core/fleet.lua as a C string, for the Redis store to
 * load (EVALSHA, EVAL after NOSCRIPT). The Makefile generates its
 * definition (build/gen/fleet_script.c, by scripts/embed.py), so the text
 * the daemon sends is always the file the tests run. */
#ifndef RETRYD_FLEET_SCRIPT_H
#define RETRYD_FLEET_SCRIPT_H

/* The whole script, NUL-terminated; static storage, never freed. What each
 * op takes and returns is written at the top of fleet.lua. */
extern const char fleet_script_text[];

#endif
