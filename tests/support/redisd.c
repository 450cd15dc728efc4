/* redisd — see redisd.h. */
#include "support/redisd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define READY_MS 10000
#define READY_TEXT "Ready to accept connections"

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static int binary_found(const char *name)
{
	const char *path = getenv("PATH");
	char buf[4096];

	if (path == NULL)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path != '\0') {
		size_t n = strcspn(path, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, name);
		if (access(buf, X_OK) == 0)
			return 1;
		path += n;
		if (*path == ':')
			path++;
	}
	return 0;
}

/* A port nobody listens on now (the kernel's pick for port 0). */
static int free_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static void reap(struct redisd *self)
{
	if (self->pid > 0) {
		kill(self->pid, SIGKILL);
		while (waitpid(self->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	self->pid = 0;
	if (self->out >= 0)
		close(self->out);
	self->out = -1;
}

/* Spawns the server and reads its output until it is ready. 1: ready,
 * 0: it exited (its log says why), -1: no answer in time. */
static int spawn(struct redisd *self)
{
	char port[16];
	const char *argv[40];
	int n = 0, fds[2];
	size_t len = 0;
	int64_t deadline;

	snprintf(port, sizeof(port), "%d", self->port);
	argv[n++] = "redis-server";
	argv[n++] = "--port";
	argv[n++] = port;
	argv[n++] = "--bind";
	argv[n++] = "127.0.0.1";
	argv[n++] = "--save";
	argv[n++] = "";
	argv[n++] = "--appendonly";
	argv[n++] = "no";
	argv[n++] = "--dir";
	argv[n++] = self->dir;
	argv[n++] = "--unixsocket";
	argv[n++] = self->sock;
	argv[n++] = "--unixsocketperm";
	argv[n++] = "700";
	argv[n++] = "--logfile";
	argv[n++] = "";
	argv[n++] = "--daemonize";
	argv[n++] = "no";
	for (int i = 0; i < 8 && self->extra[i] != NULL; i++)
		argv[n++] = self->extra[i];
	argv[n] = NULL;

	self->log[0] = '\0';
	if (pipe(fds) != 0)
		return 0;
	self->pid = fork();
	if (self->pid == 0) {
#ifdef __linux__
		prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		execvp("redis-server", (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	self->out = fds[0];
	if (self->pid < 0) {
		self->pid = 0;
		reap(self);
		return 0;
	}
	fcntl(self->out, F_SETFD, FD_CLOEXEC);
	deadline = mono_ms() + READY_MS;
	for (;;) {
		struct pollfd p = { .fd = self->out, .events = POLLIN };
		int64_t left = deadline - mono_ms();
		ssize_t got;

		if (left <= 0)
			return -1;
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		if (len + 1 >= sizeof(self->log)) {
			/* Keep the last half: the ready line is what matters now. */
			memmove(self->log, self->log + len / 2, len - len / 2 + 1);
			len -= len / 2;
		}
		got = read(self->out, self->log + len, sizeof(self->log) - len - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return 0;
		len += (size_t)got;
		self->log[len] = '\0';
		if (strstr(self->log, READY_TEXT) != NULL)
			return 1;
	}
}

static int start_on(struct redisd *self, char *err, size_t errlen, int tries)
{
	for (int t = 0; t < tries; t++) {
		int rc;

		if (tries > 1 && (self->port = free_port()) <= 0)
			return fail(err, errlen, "redisd: no free port: %s", strerror(errno));
		rc = spawn(self);
		if (rc == 1)
			return 0;
		reap(self);
		if (rc < 0)
			return fail(err, errlen, "redisd: redis-server did not get ready in %d ms: %s",
				    READY_MS, self->log);
		/* Someone took the port between our probe and its bind: another. */
		if (strstr(self->log, "already in use") == NULL)
			break;
	}
	return fail(err, errlen, "redisd: redis-server exited at start: %s", self->log);
}

int redisd_start(struct redisd *self, char *err, size_t errlen)
{
	self->pid = 0;
	self->out = -1;
	if (!binary_found("redis-server"))
		return fail(err, errlen, "redisd: redis-server is not installed (scripts/deps.sh "
			    "installs it: apt-get install redis-server); the Redis tests need a real one");
	snprintf(self->dir, sizeof(self->dir), "/tmp/retryd-redisd-XXXXXX");
	if (mkdtemp(self->dir) == NULL) {
		self->dir[0] = '\0';
		return fail(err, errlen, "redisd: mkdtemp: %s", strerror(errno));
	}
	snprintf(self->sock, sizeof(self->sock), "%s/redis.sock", self->dir);
	return start_on(self, err, errlen, 5);
}

void redisd_kill(struct redisd *self)
{
	reap(self);
}

int redisd_restart(struct redisd *self, char *err, size_t errlen)
{
	reap(self);
	unlink(self->sock);
	return start_on(self, err, errlen, 1);
}

void redisd_stop(struct redisd *self)
{
	reap(self);
	if (self->dir[0] != '\0') {
		unlink(self->sock);
		rmdir(self->dir);
		self->dir[0] = '\0';
	}
}

static int send_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_command(int fd, int argc, const char **argv)
{
	char head[64];

	snprintf(head, sizeof(head), "*%d\r\n", argc);
	if (send_all(fd, head, strlen(head)) != 0)
		return -1;
	for (int i = 0; i < argc; i++) {
		snprintf(head, sizeof(head), "$%zu\r\n", strlen(argv[i]));
		if (send_all(fd, head, strlen(head)) != 0 || send_all(fd, argv[i], strlen(argv[i])) != 0 ||
		    send_all(fd, "\r\n", 2) != 0)
			return -1;
	}
	return 0;
}

/* One reply, byte by byte (the connection is ours and short-lived): its
 * first line, a bulk string's text, an array's elements. */
static int read_reply(int fd, char *out, size_t outlen)
{
	size_t n = 0;
	char c, prev = 0;

	for (;;) {
		if (recv(fd, &c, 1, 0) != 1)
			return -1;
		if (prev == '\r' && c == '\n')
			break;
		if (prev != 0 && n + 1 < outlen)
			out[n++] = prev;
		prev = c;
	}
	out[n] = '\0';
	if (out[0] == '*' && atol(out + 1) > 0) {
		/* An array of scalars: " " and each element's line after the count. */
		long count = atol(out + 1);

		for (long i = 0; i < count; i++) {
			char elem[512];

			if (read_reply(fd, elem, sizeof(elem)) != 0)
				return -1;
			n = strlen(out);
			snprintf(out + n, outlen - n, " %s", elem);
		}
		return 0;
	}
	if (out[0] == '$' && atol(out + 1) >= 0) {
		long len = atol(out + 1);

		n = 1;
		for (long i = 0; i < len + 2; i++) {
			if (recv(fd, &c, 1, 0) != 1)
				return -1;
			if (i < len && n + 1 < outlen)
				out[n++] = c;
		}
		out[n] = '\0';
	}
	return 0;
}

int redisd_command(struct redisd *self, char *out, size_t outlen, const char *arg0, ...)
{
	const char *argv[16];
	int argc = 0, fd, rc = -1;
	struct sockaddr_in a;
	struct timeval tv = { .tv_sec = 5 };
	va_list ap;
	char scratch[256];

	argv[argc++] = arg0;
	va_start(ap, arg0);
	while (argc < 16 && (argv[argc] = va_arg(ap, const char *)) != NULL)
		argc++;
	va_end(ap);
	out[0] = '\0';
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)self->port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
		goto done;
	if (self->password != NULL) {
		const char *auth[2] = { "AUTH", self->password };

		if (send_command(fd, 2, auth) != 0 || read_reply(fd, scratch, sizeof(scratch)) != 0)
			goto done;
	}
	if (send_command(fd, argc, argv) != 0 || read_reply(fd, out, outlen) != 0)
		goto done;
	rc = 0;
done:
	close(fd);
	return rc;
}
