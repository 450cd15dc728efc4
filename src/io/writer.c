#include "io/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/jsontext.h"
#include "base/log.h"
#include "base/secret.h"

/* Buffers up to this size are kept between writes when the output is
 * quiet. A congested stream cycles through buffers of about the high-water
 * mark: those are kept (twice the mark, see keep_cap) until a drain that is
 * not the end of a congestion, so a long answer to a slow reader does not
 * allocate, fault in and grow by copying a fresh megabyte per cycle. */
#define WRITER_KEEP_CAP (256u * 1024u)

/* A file (or /dev/null) is written with plain blocking writes, once per loop
 * turn, or at once when this much is queued: not a write per line. */
#define WRITER_FILE_BATCH (64u * 1024u)

/* A pipe or socket is written with plain non-blocking writes of whole
 * lines, and only as many as its kernel buffer surely takes: so when the
 * shutdown flush limit runs out with a reader that stopped reading, what it
 * finds is whole lines up to the last complete one, never a cut one (libuv's
 * uv_write writes what fits, mid-line). While the next line does not fit,
 * the room is looked at again after 1 ms, then 2, 4 ... up to this. */
#define WRITER_RECHECK_MAX_MS 64

/* Writes remembered for the pipe room estimate (older ones are merged). */
#define WRITER_HISTORY 512

/* Linux's fcntl codes (<fcntl.h> has them only with _GNU_SOURCE). */
#if defined(__linux__) && !defined(F_SETPIPE_SZ)
#define F_SETPIPE_SZ 1031
#define F_GETPIPE_SZ 1032
#endif

/* How the room left in the kernel's buffer is known. */
enum room_kind {
	ROOM_UNKNOWN, /* not at all: everything is written as it fits (a TCP socket, not Linux) */
	ROOM_PIPE,    /* Linux pipe: its slots, what is unread, our recent writes */
	ROOM_UNIX,    /* Linux Unix stream socket: its send buffer and what is queued */
};

struct room_entry {
	size_t bytes;
	size_t slots; /* pipe buffers (pages) these bytes may take at most */
};

struct writer {
	void (*closed)(void *ctx);  /* writer_close's done callback, may be NULL */
	void *closed_ctx;
	uv_handle_type kind;
	int fd;
	int open_handles;           /* closing: writer_close frees when this reaches 0 */
	bool handle_ready, timer_ready, turn_ready; /* h, recheck, turn are initialized */
	union {
		uv_handle_t handle;
		uv_stream_t stream;
		uv_poll_t poll;       /* UV_NAMED_PIPE (pipes and sockets): written by hand */
		uv_tty_t tty;
		uv_prepare_t prepare; /* UV_FILE: writes what a loop turn queued */
	} h;
	uv_write_t req;               /* UV_TTY */
	uv_prepare_t turn;            /* UV_NAMED_PIPE: writes what a loop turn queued */
	uv_timer_t recheck;           /* UV_NAMED_PIPE: waiting for room for a whole line */
	struct jsontext_buf pending;  /* being appended to */
	struct jsontext_buf inflight; /* being written */
	bool writing;                 /* a write, or a wait for room, is under way */
	bool pumping;                 /* in pump(): sends only queue */
	size_t sent;                  /* UV_NAMED_PIPE: of inflight, written so far */
	size_t line_end;              /* > sent: a begun line, to be finished first */
	unsigned recheck_ms;
	bool polled;       /* waited for writable once since the last write */
	enum room_kind room_kind;
	size_t page;                  /* ROOM_PIPE: bytes per pipe buffer */
	size_t cap_slots;             /* ROOM_PIPE: buffers in the pipe */
	size_t sndbuf;                /* ROOM_UNIX: SO_SNDBUF */
	struct room_entry hist[WRITER_HISTORY]; /* ROOM_PIPE: our writes, oldest first (a ring) */
	size_t hist_first, hist_n, hist_bytes, hist_slots;
	size_t high, low;
	size_t keep_cap;              /* larger buffers are freed once written */
	bool congested;
	bool failed;
	struct writer_callbacks cbs;
	void (*flush_done)(void *ctx);
	void *flush_ctx;
};

static void buf_free(struct jsontext_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->cap = 0;
	b->len = 0;
}

static void buf_reset(struct jsontext_buf *b, size_t keep)
{
	b->len = 0;
	if (b->cap > keep)
		buf_free(b);
}

static int append(struct jsontext_buf *b, const char *s, size_t n)
{
	if (jsontext_reserve(b, n) != 0)
		return -1;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	return 0;
}

size_t writer_queued(const struct writer *self)
{
	return self->pending.len + self->inflight.len;
}

/* Returns whether a congestion ended. */
static bool update_congestion(struct writer *self)
{
	size_t q = writer_queued(self);

	if (!self->congested && q > self->high) {
		self->congested = true;
		if (self->cbs.congestion)
			self->cbs.congestion(self->cbs.ctx, true);
	} else if (self->congested && q <= self->low) {
		self->congested = false;
		if (self->cbs.congestion)
			self->cbs.congestion(self->cbs.ctx, false);
		return true;
	}
	return false;
}

static void maybe_flushed(struct writer *self)
{
	void (*done)(void *) = self->flush_done;

	if (done == NULL || (writer_queued(self) > 0 && !self->failed))
		return;
	self->flush_done = NULL;
	done(self->flush_ctx);
}

static void fail(struct writer *self, int err)
{
	if (self->failed)
		return;
	self->failed = true;
	self->pending.len = 0;
	self->inflight.len = 0;
	self->sent = 0;
	self->line_end = 0;
	if (self->kind == UV_NAMED_PIPE) {
		uv_poll_stop(&self->h.poll);
		uv_timer_stop(&self->recheck);
		uv_prepare_stop(&self->turn);
		self->writing = false;
	}
	if (err != UV_EPIPE)
		LOG_ERROR("cannot write to stdout: %s", uv_strerror(err));
	if (self->cbs.failed)
		self->cbs.failed(self->cbs.ctx, err);
	update_congestion(self);
	maybe_flushed(self);
}

static void kick(struct writer *self);

static void on_written(uv_write_t *req, int status)
{
	struct writer *self = req->data;

	self->writing = false;
	buf_reset(&self->inflight, self->keep_cap);
	if (status < 0) {
		fail(self, status);
		return;
	}
	if (!update_congestion(self) && self->pending.len == 0) {
		/* Quiet again: what a burst grew goes back. */
		buf_reset(&self->inflight, WRITER_KEEP_CAP);
		buf_reset(&self->pending, WRITER_KEEP_CAP);
	}
	kick(self);
	maybe_flushed(self);
}

/* The pipe room estimate. Linux keeps a pipe's bytes in page-sized
 * buffers, a fixed number of them (F_GETPIPE_SZ / page); a write takes new
 * ones for what does not fit the last one, at most ceil(n / page), and
 * fails with EAGAIN, or writes part, when none is left. FIONREAD says how
 * much is unread: the last bytes written. So the writes still (partly)
 * unread, with their buffers counted at most, bound what is taken; what is
 * left surely takes a write of that many bytes whole. */
static size_t pages(const struct writer *self, size_t n)
{
	return (n + self->page - 1) / self->page;
}

static void room_remember(struct writer *self, size_t n)
{
	struct room_entry *e;

	if (self->room_kind != ROOM_PIPE || n == 0)
		return;
	if (self->hist_n == WRITER_HISTORY) {
		/* Full: the newest entry takes it (still an upper bound). */
		e = &self->hist[(self->hist_first + self->hist_n - 1) % WRITER_HISTORY];
	} else {
		e = &self->hist[(self->hist_first + self->hist_n++) % WRITER_HISTORY];
		e->bytes = 0;
		e->slots = 0;
	}
	e->bytes += n;
	e->slots += pages(self, n);
	self->hist_bytes += n;
	self->hist_slots += pages(self, n);
}

/* Drops the writes the reader has read all of. */
static void room_forget(struct writer *self, size_t unread)
{
	while (self->hist_n > 0) {
		struct room_entry *e = &self->hist[self->hist_first];

		if (self->hist_bytes - e->bytes < unread)
			break;
		self->hist_bytes -= e->bytes;
		self->hist_slots -= e->slots;
		self->hist_first = (self->hist_first + 1) % WRITER_HISTORY;
		self->hist_n--;
	}
}

/* Linux Unix stream socket: a write is cut into buffers of min(sndbuf/2 -
 * 64, 32 KiB and a bit) bytes (the last one shorter), and each is queued
 * while the bytes charged to the socket (TIOCOUTQ: payload and at most a page
 * and a bit of overhead per buffer) are below SO_SNDBUF; else EAGAIN, or part
 * written. So n bytes go whole when queued + n + (n / buffer) * overhead <
 * SO_SNDBUF, and one buffer's worth whenever queued < SO_SNDBUF. */
#define WRITER_SKB_OVERHEAD 8192u
#define WRITER_SKB_MIN 32768u

/* Bytes that surely fit the kernel's buffer whole now (empty: when it is
 * empty); SIZE_MAX when that is not known. */
static size_t room_now(struct writer *self, bool empty)
{
	switch (self->room_kind) {
	case ROOM_PIPE: {
		size_t used = 0;
		int unread = 0;

		if (!empty) {
			if (ioctl(self->fd, FIONREAD, &unread) != 0 || unread < 0)
				return SIZE_MAX;
			room_forget(self, (size_t)unread);
			used = self->hist_slots;
			if ((size_t)unread > self->hist_bytes) /* another writer's bytes too */
				used += pages(self, (size_t)unread - self->hist_bytes) + 1;
		}
		return used >= self->cap_slots ? 0 : (self->cap_slots - used) * self->page;
	}
	case ROOM_UNIX: {
		size_t skb = self->sndbuf / 2 > WRITER_SKB_MIN + 64 ? WRITER_SKB_MIN
				: self->sndbuf / 2 > 65 ? self->sndbuf / 2 - 64 : 1;
		size_t fit;
		int queued = 0;

		if (!empty && (ioctl(self->fd, TIOCOUTQ, &queued) != 0 || queued < 0))
			return SIZE_MAX;
		if ((size_t)queued >= self->sndbuf)
			return 0;
		fit = (size_t)((uint64_t)(self->sndbuf - (size_t)queued - 1) * skb /
			       (skb + WRITER_SKB_OVERHEAD));
		return fit > skb ? fit : skb;
	}
	default:
		return SIZE_MAX;
	}
}

static void room_init(struct writer *self)
{
#ifdef __linux__
	int size = fcntl(self->fd, F_GETPIPE_SZ);
	long page = sysconf(_SC_PAGESIZE);
	int type = 0, sndbuf = 0;
	socklen_t len = sizeof(type);
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof(ss);

	if (size > 0 && page > 0 && size / page > 0) {
		self->room_kind = ROOM_PIPE;
		self->page = (size_t)page;
		self->cap_slots = (size_t)(size / page);
		return;
	}
	if (getsockopt(self->fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM &&
	    getsockname(self->fd, (struct sockaddr *)&ss, &sslen) == 0 && ss.ss_family == AF_UNIX) {
		len = sizeof(sndbuf);
		if (getsockopt(self->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &len) == 0 && sndbuf > 0) {
			self->room_kind = ROOM_UNIX;
			self->sndbuf = (size_t)sndbuf;
		}
	}
#else
	(void)self;
#endif
}

/* The end (just past the LF) of the line of inflight that holds byte `at`. */
static size_t line_end_after(const struct writer *self, size_t at)
{
	const char *nl = memchr(self->inflight.data + at, '\n', self->inflight.len - at);

	return nl != NULL ? (size_t)(nl - self->inflight.data) + 1 : self->inflight.len;
}

/* What of p[0..left) (whole lines; left ends one) to write now: the longest
 * run of whole lines that surely fits, or 0 to wait for room. A line that
 * would not fit even the empty buffer is begun anyway, and then finished
 * before any other (line_end): it cannot be helped. */
static size_t lines_that_fit(struct writer *self, const char *p, size_t left)
{
	size_t room = room_now(self, false);
	size_t n = left < room ? left : room;

	if (n == left)
		return left;
	while (n > 0 && p[n - 1] != '\n')
		n--;
	if (n > 0)
		return n;
	self->line_end = line_end_after(self, self->sent);
	n = self->line_end - self->sent;
	if (n > room_now(self, true))
		return n;
	self->line_end = 0;
	return 0;
}

static void on_pipe_timer(uv_timer_t *t);
static void on_pipe_turn(uv_prepare_t *h);
static void on_pipe_writable(uv_poll_t *h, int status, int events);

/* pump() runs from the loop, never inside writer_send: its callbacks
 * (congestion ended, failed) may call back into the producers, as libuv's
 * write callbacks did. Before the loop waits: all that one turn queued
 * goes in one write. */
static void pump_this_turn(struct writer *self)
{
	self->writing = true;
	uv_prepare_start(&self->turn, on_pipe_turn);
}

static void pump_later(struct writer *self, uint64_t ms)
{
	self->writing = true;
	uv_timer_start(&self->recheck, on_pipe_timer, ms, 0);
}

/* All of inflight is written. */
static void inflight_written(struct writer *self)
{
	buf_reset(&self->inflight, self->keep_cap);
	self->sent = 0;
	self->line_end = 0;
	if (!update_congestion(self) && self->pending.len == 0) {
		/* Quiet again: what a burst grew goes back. */
		buf_reset(&self->inflight, WRITER_KEEP_CAP);
		buf_reset(&self->pending, WRITER_KEEP_CAP);
	}
}

/* UV_NAMED_PIPE: writes whole lines while they surely fit, until all is
 * written or the kernel's buffer is full. */
static void pump(struct writer *self)
{
	while (!self->failed && !self->writing) {
		const char *p;
		size_t left, n;
		ssize_t w;

		if (self->sent == self->inflight.len) {
			struct jsontext_buf tmp;

			if (self->inflight.len > 0)
				inflight_written(self);
			if (self->pending.len == 0)
				return;
			tmp = self->inflight;
			self->inflight = self->pending;
			self->pending = tmp;
			continue;
		}
		p = self->inflight.data + self->sent;
		left = self->inflight.len - self->sent;
		if (self->line_end > self->sent) {
			n = self->line_end - self->sent;
		} else {
			n = lines_that_fit(self, p, left);
			if (n == 0 && !self->polled) {
				/* Wait for the kernel to say it took some out (a
				 * pipe: a free slot), at once, not a timer's 1 ms:
				 * a fast reader must not be made to wait. */
				self->polled = true;
				self->writing = true;
				uv_poll_start(&self->h.poll, UV_WRITABLE, on_pipe_writable);
				return;
			}
			if (n == 0) {
				/* Writable, yet the next line still does not surely
				 * fit (longer than the room one slot makes): look
				 * again later, not in a busy loop. */
				pump_later(self, self->recheck_ms);
				if (self->recheck_ms < WRITER_RECHECK_MAX_MS)
					self->recheck_ms *= 2;
				return;
			}
		}
		w = write(self->fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			fail(self, uv_translate_sys_error(errno));
			return;
		}
		if (w > 0) {
			self->recheck_ms = 1;
			self->polled = false;
			room_remember(self, (size_t)w);
			self->sent += (size_t)w;
		}
		if (w < 0 || (size_t)w < n) {
			/* Less room than estimated (another writer on the same
			 * pipe, a line longer than the buffer): a begun line is
			 * finished before any other. */
			if (self->sent > 0 && self->inflight.data[self->sent - 1] != '\n' &&
			    self->line_end <= self->sent)
				self->line_end = line_end_after(self, self->sent);
			self->writing = true;
			uv_poll_start(&self->h.poll, UV_WRITABLE, on_pipe_writable);
			return;
		}
	}
}

static void on_pipe_timer(uv_timer_t *t)
{
	struct writer *self = t->data;

	self->writing = false;
	pump(self);
	maybe_flushed(self);
}

static void on_pipe_turn(uv_prepare_t *h)
{
	struct writer *self = h->data;

	uv_prepare_stop(h);
	self->writing = false;
	pump(self);
	maybe_flushed(self);
}

static void on_pipe_writable(uv_poll_t *h, int status, int events)
{
	struct writer *self = h->data;

	/* An error shows in the write itself. */
	(void)status;
	(void)events;
	uv_poll_stop(h);
	self->writing = false;
	pump(self);
	maybe_flushed(self);
}

/* Regular files and /dev/null: a plain blocking write is fine and safe. */
static void write_file(struct writer *self)
{
	size_t off = 0;

	while (off < self->inflight.len) {
		ssize_t n = write(self->fd, self->inflight.data + off, self->inflight.len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			fail(self, uv_translate_sys_error(errno));
			return;
		}
		off += (size_t)n;
	}
	buf_reset(&self->inflight, WRITER_KEEP_CAP);
}

/* UV_FILE: everything queued goes out now. */
static void flush_file(struct writer *self)
{
	struct jsontext_buf tmp;

	if (self->failed || self->pending.len == 0)
		return;
	tmp = self->inflight;
	self->inflight = self->pending;
	self->pending = tmp;
	write_file(self);
	update_congestion(self);
}

/* Before the loop waits: what this turn queued for a file. */
static void on_prepare(uv_prepare_t *handle)
{
	struct writer *self = handle->data;

	uv_prepare_stop(handle);
	flush_file(self);
	maybe_flushed(self);
}

static void kick(struct writer *self)
{
	struct jsontext_buf tmp;
	uv_buf_t ub;
	int rc;

	if (self->writing || self->failed || self->pending.len == 0)
		return;
	if (self->kind == UV_FILE) {
		if (self->pending.len >= WRITER_FILE_BATCH)
			flush_file(self);
		else
			uv_prepare_start(&self->h.prepare, on_prepare);
		return;
	}
	if (self->kind == UV_NAMED_PIPE) {
		pump_this_turn(self);
		return;
	}
	tmp = self->inflight;
	self->inflight = self->pending;
	self->pending = tmp;
	ub = uv_buf_init(self->inflight.data, (unsigned int)self->inflight.len);
	self->req.data = self;
	rc = uv_write(&self->req, &self->h.stream, &ub, 1, on_written);
	if (rc < 0) {
		fail(self, rc);
		return;
	}
	self->writing = true;
}

/* A pipe holds 64 KiB by default: a long answer then goes out in many small
 * writes, each waking the reader. Ask for the high-water mark (at most
 * /proc/sys/fs/pipe-max-size, 1 MiB by default); a refusal changes nothing. */
static void grow_pipe(int fd, size_t high)
{
#ifdef F_SETPIPE_SZ
	int size = high > (1u << 20) ? 1 << 20 : (int)high;

	(void)fcntl(fd, F_SETPIPE_SZ, size);
#else
	(void)fd;
	(void)high;
#endif
}

struct writer *writer_new(uv_loop_t *loop, int fd, size_t high, const struct writer_callbacks *cbs)
{
	struct writer *self = calloc(1, sizeof(*self));
	int rc = 0;

	if (self == NULL)
		return NULL;
	self->fd = fd;
	self->high = high;
	self->low = high / 2;
	self->keep_cap = WRITER_KEEP_CAP;
	while (self->keep_cap < high && self->keep_cap <= (size_t)-1 / 4)
		self->keep_cap *= 2;
	self->keep_cap *= 2;
	if (cbs)
		self->cbs = *cbs;
	self->kind = uv_guess_handle(fd);
	switch (self->kind) {
	case UV_NAMED_PIPE:
	case UV_TCP:
		grow_pipe(fd, high);
		self->kind = UV_NAMED_PIPE;
		room_init(self);
		self->recheck_ms = 1;
		rc = uv_timer_init(loop, &self->recheck);
		self->recheck.data = self;
		self->timer_ready = rc == 0;
		if (rc == 0)
			rc = uv_prepare_init(loop, &self->turn);
		self->turn.data = self;
		self->turn_ready = rc == 0;
		if (rc == 0)
			rc = uv_poll_init(loop, &self->h.poll, fd); /* makes fd non-blocking */
		self->handle_ready = rc == 0;
		break;
	case UV_TTY:
		/* A TTY libuv cannot take is still a file descriptor. */
		if (uv_tty_init(loop, &self->h.tty, fd, 0) != 0)
			self->kind = UV_FILE;
		else
			self->handle_ready = true;
		break;
	default:
		self->kind = UV_FILE;
		break;
	}
	if (self->kind == UV_FILE) {
		rc = uv_prepare_init(loop, &self->h.prepare);
		self->handle_ready = rc == 0;
	}
	self->h.handle.data = self;
	if (rc != 0) {
		LOG_ERROR("cannot use fd %d for output: %s", fd, uv_strerror(rc));
		writer_close(self, NULL, NULL);
		return NULL;
	}
	return self;
}

int writer_send(struct writer *self, const json_t *obj)
{
	size_t mark = self->pending.len;

	if (self->failed)
		return UV_EPIPE;
	/* jsontext_dump writes what jansson's compact dump would, faster. */
	if (jsontext_dump(obj, &self->pending) != 0) {
		self->pending.len = mark;
		LOG_ERROR("out of memory while queueing output");
		return UV_ENOMEM;
	}
	/* What the user wrote stays as written in the context the provider
	 * gets; a key in it is masked on its way out here. A mask replaces
	 * bytes inside a JSON string value with "***": the line stays valid,
	 * its keys and protocol fields as they were. */
	if (self->pending.len > mark) {
		size_t n = self->pending.len - mark;

		secret_mask_json_text(self->pending.data + mark, &n);
		self->pending.len = mark + n;
	}
	if (append(&self->pending, "\n", 1) != 0) {
		self->pending.len = mark;
		LOG_ERROR("out of memory while queueing output");
		return UV_ENOMEM;
	}
	update_congestion(self);
	kick(self);
	return 0;
}

struct jsontext_buf *writer_line_buffer(struct writer *self)
{
	return self->failed ? NULL : &self->pending;
}

void writer_line_done(struct writer *self)
{
	update_congestion(self);
	kick(self);
}

void writer_flush(struct writer *self, void (*done)(void *ctx), void *ctx)
{
	self->flush_done = done;
	self->flush_ctx = ctx;
	if (self->kind == UV_FILE)
		flush_file(self);
	kick(self);
	maybe_flushed(self);
}

/* The last thing a closing writer does: free itself, then say so. */
static void release(struct writer *self)
{
	void (*closed)(void *ctx) = self->closed;
	void *ctx = self->closed_ctx;

	free(self->pending.data);
	free(self->inflight.data);
	free(self);
	if (closed != NULL)
		closed(ctx);
}

static void on_closed(uv_handle_t *handle)
{
	struct writer *self = handle->data;

	if (--self->open_handles == 0)
		release(self);
}

void writer_close(struct writer *self, void (*done)(void *ctx), void *ctx)
{
	self->closed = done;
	self->closed_ctx = ctx;
	if (self->kind == UV_FILE)
		flush_file(self);
	if (self->kind == UV_NAMED_PIPE && self->handle_ready) {
		/* What surely fits still goes, whole lines only; the rest is
		 * dropped, so the reader's last line is whole (see pump). Nobody
		 * is told about anything any more. */
		memset(&self->cbs, 0, sizeof(self->cbs));
		self->flush_done = NULL;
		uv_poll_stop(&self->h.poll);
		uv_timer_stop(&self->recheck);
		uv_prepare_stop(&self->turn);
		self->writing = false;
		pump(self);
	}
	if (self->handle_ready) {
		self->open_handles++;
		uv_close(&self->h.handle, on_closed);
	}
	if (self->timer_ready) {
		self->open_handles++;
		uv_close((uv_handle_t *)&self->recheck, on_closed);
	}
	if (self->turn_ready) {
		self->open_handles++;
		uv_close((uv_handle_t *)&self->turn, on_closed);
	}
	if (self->open_handles == 0)
		release(self); /* writer_new failed before any handle */
}
