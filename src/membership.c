/* membership — this daemon's fleet, made at its start (membership.h). */
#include "membership.h"

#include <stdint.h>
#include <string.h>

#include "base/log.h"
#include "base/random.h"
#include "base/secret.h"
#include "core/settings.h"
#include "io/redis.h"

static void on_first_ping(void *ctx, enum redis_status st, const struct redis_value *v)
{
	(void)ctx;
	(void)v;
	if (st != REDIS_OK && st != REDIS_CLOSED)
		LOG_INFO("fleet: redis not reachable yet; deciding locally until it is");
}

struct fleet *membership_start(uv_loop_t *loop, struct settings *settings, const char *provider,
			       struct clock *clock, char *err, size_t errlen)
{
	struct fleet_config cfg;
	struct fleet *fleet;
	uint64_t member = 0;

	if (fleet_config_from_settings(&cfg, settings, provider, err, errlen) != 0)
		return NULL;

	random_bytes(&member, sizeof(member));
	cfg.member = (int64_t)(member >> 12) + 1; /* > 0, exact in a Lua number */
	cfg.clock = clock;
	if (cfg.mode == FLEET_MODE_REDIS) {
		struct redis_options ro = {
			.url = settings_get_string(settings, "fleet.redis.url"),
			.password = settings_string(settings, "fleet.redis.password", NULL),
			.timeout_ms = (int)settings_get_int(settings, "fleet.redis.timeoutMs"),
			.max_reply_bytes =
				(size_t)settings_get_int(settings, "fleet.redis.maxReplyBytes"),
		};
		const char *ping[] = { "PING" };

		if (ro.password != NULL)
			secret_register(ro.password);
		cfg.redis = redis_new(loop, &ro, err, errlen);
		if (cfg.redis == NULL)
			return NULL;
		redis_command(cfg.redis, 1, ping, on_first_ping, NULL);
	}
	fleet = fleet_new(&cfg, err, errlen);
	if (fleet == NULL && cfg.mode == FLEET_MODE_USER &&
	    (cfg.dir == NULL || cfg.dir[0] == '\0')) {
		/* The default folder is not usable (another user owns
		 * /tmp/retryd-$UID, say): that must not stop the daemon, only its
		 * sharing. A fleet.dir given on purpose does stop it. */
		LOG_WARN("fleet: %s; this daemon shares nothing (as fleet.mode \"process\")", err);
		cfg.mode = FLEET_MODE_PROCESS;
		cfg.params.open_after = 0;
		cfg.params.budget_max = 0;
		fleet = fleet_new(&cfg, err, errlen);
	}
	if (fleet == NULL) {
		if (cfg.redis != NULL)
			redis_close(cfg.redis, NULL, NULL);
		return NULL;
	}
	/* A sim plan is a script of this process, not the word of a server:
	 * its 429s must not hold another daemon's prompts, nor another's block
	 * this one's. Shared only when a test of the fleet asks. The fleet as
	 * configured was made first, so that a wrong fleet.dir or redis URL is
	 * still refused at start. */
	if ((provider == NULL || strcmp(provider, "sim") == 0) && cfg.mode != FLEET_MODE_PROCESS &&
	    !settings_get_bool(settings, "sim.shareFleet")) {
		fleet_close(fleet, NULL, NULL);
		cfg.mode = FLEET_MODE_PROCESS;
		cfg.redis = NULL;
		cfg.params.open_after = 0;
		cfg.params.budget_max = 0;
		if ((fleet = fleet_new(&cfg, err, errlen)) == NULL)
			return NULL;
		LOG_DEBUG("fleet: the simulator shares nothing (sim.shareFleet is false)");
	}
	LOG_DEBUG("fleet: mode %s", fleet_mode_name(cfg.mode));
	return fleet;
}
