/* membership — this daemon's place in its fleet, made at its start: the
 * store fleet.mode names (core/fleet), a random member id, and in Redis
 * mode the connection begun at once, so the first prompt finds it up. */
#ifndef RETRYD_MEMBERSHIP_H
#define RETRYD_MEMBERSHIP_H

#include <stddef.h>
#include <uv.h>

#include "base/clock.h"
#include "core/fleet.h"

struct settings;

/* The fleet the settings' fleet.* keys describe, for the provider named
 * provider (its fleet.providerScopes entry). Everything borrowed; loop and
 * clock must outlive the fleet. When the default user
 * folder is unusable the daemon shares nothing (as fleet.mode "process"),
 * which is logged; a fleet.dir given on purpose fails instead. Returns a
 * new fleet (fleet_close), or NULL with err. */
struct fleet *membership_start(uv_loop_t *loop, struct settings *settings, const char *provider,
			       struct clock *clock, char *err, size_t errlen);

#endif
