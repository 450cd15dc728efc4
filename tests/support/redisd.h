/* redisd — a real redis-server for the unit tests: started as a child on a
 * free 127.0.0.1 port and a unix socket in a temporary directory, with no
 * persistence, and killed by its PID.
 *
 * Ready means the server logged "Ready to accept connections": the helper
 * reads its output with poll() until then (bounded), so there is no sleep
 * and no connect-retry loop. The child dies with the test process
 * (PR_SET_PDEATHSIG). When redis-server is not installed, start fails and
 * says so: a test that needs it must fail, not pass. */
#ifndef RETRYD_TEST_REDISD_H
#define RETRYD_TEST_REDISD_H

#include <stddef.h>
#include <sys/types.h>

struct redisd {
	pid_t pid;               /* 0 when not running */
	int port;
	int out;                 /* the read end of its stdout/stderr, or -1 */
	char dir[64];            /* the temporary directory (cwd of the server) */
	char sock[128];          /* its unix socket, dir/redis.sock */
	const char *extra[8];    /* more arguments, e.g. "--requirepass", "pw"; NULL-ended */
	const char *password;    /* for redisd_command: sent with AUTH first; NULL: none */
	char log[4096];          /* the start of its output, for messages */
};

/* Starts a server with self->extra's arguments (set them before). Returns 0,
 * or -1 with err saying why (e.g. redis-server not found). */
int redisd_start(struct redisd *self, char *err, size_t errlen);
/* Kills it with SIGKILL and reaps it; the directory stays (for a restart). */
void redisd_kill(struct redisd *self);
/* Starts it again on the same port, socket and arguments. */
int redisd_restart(struct redisd *self, char *err, size_t errlen);
/* Kills it and removes the directory. Safe when not started. */
void redisd_stop(struct redisd *self);

/* Runs one command on a connection of its own (blocking, 5 s bound):
 * the arguments, NULL-ended. Writes the reply to out as its first line
 * without "\r\n" ("+OK", "-ERR ...", ":1"), a bulk string as "$" then its
 * text, an array as "*N" then " " and each element ("*1 :0").
 * Returns 0, or -1 when there was no answer. */
int redisd_command(struct redisd *self, char *out, size_t outlen, const char *arg0, ...);

#endif
