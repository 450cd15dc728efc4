#include "base/secret.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

#define MASK_LEN (sizeof(SECRET_MASK) - 1)
/* "Bearer" and its token may stand this many spaces apart. */
#define BEARER_SPACES_MAX 8

enum shape_kind { SHAPE_NONE, SHAPE_TOKEN, SHAPE_BEARER };

struct shape {
	const char *prefix;
	size_t plen;
	size_t min;     /* token bytes after the prefix (after the spaces for bearer) */
	int kind;
};

/* Prefixes the providers document for their keys; the minimum lengths are
 * far below a real key's and far above an ordinary word's. */
static const struct shape shapes[] = {
	{ "sk-", 3, 20, SHAPE_TOKEN },
	{ "AIza", 4, 30, SHAPE_TOKEN },
	{ "xai-", 4, 20, SHAPE_TOKEN },
	{ "gsk_", 4, 20, SHAPE_TOKEN },
	{ "bearer", 6, 16, SHAPE_BEARER },  /* any case */
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

struct known {
	char *value;
	size_t len;
};

/* The registry, longest first: at one position the longest key wins, and a
 * key that is a prefix of another is masked as the longer one. */
static struct known *known;
static size_t nknown;

enum { FIRST_KNOWN = 1, FIRST_SHAPE = 2 };
/* What may start at a byte: a registered key, a shape. Most bytes are
 * neither, so the scan skips them with one lookup. */
static unsigned char first[256] = {
	/* The first letters of shapes[]' prefixes (set_first() keeps them). */
	['s'] = FIRST_SHAPE, ['A'] = FIRST_SHAPE, ['x'] = FIRST_SHAPE, ['g'] = FIRST_SHAPE,
	['b'] = FIRST_SHAPE, ['B'] = FIRST_SHAPE,
};

enum found_kind { FOUND_NONE, FOUND_MASK, FOUND_HOLD };

struct found {
	size_t start, end;  /* what is masked, or (start) where the hold begins */
	int swallow;        /* a shaped token that the text's end cut: its kind */
};

static bool is_alnum(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool in_token(int kind, int c)
{
	if (is_alnum(c) || c == '-' || c == '_')
		return true;
	return kind == SHAPE_BEARER && (c == '.' || c == '~' || c == '+' || c == '/' || c == '=');
}

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static void set_first(void)
{
	memset(first, 0, sizeof(first));
	for (size_t i = 0; i < NSHAPES; i++) {
		unsigned char c = (unsigned char)shapes[i].prefix[0];

		first[c] |= FIRST_SHAPE;
		if (shapes[i].kind == SHAPE_BEARER)
			first[c - 32] |= FIRST_SHAPE;
	}
	for (size_t i = 0; i < nknown; i++)
		first[(unsigned char)known[i].value[0]] |= FIRST_KNOWN;
}

int secret_register(const char *value)
{
	size_t len = strlen(value), at;
	struct known *k;
	char *copy;

	if (len < SECRET_MIN_LEN || !utf8_valid(value, len))
		return 0;
	for (at = 0; at < nknown && known[at].len >= len; at++)
		if (known[at].len == len && memcmp(known[at].value, value, len) == 0)
			return 0;
	copy = strdup(value);
	k = copy ? realloc(known, (nknown + 1) * sizeof(*k)) : NULL;
	if (k == NULL) {
		free(copy);
		return -1;
	}
	known = k;
	memmove(&known[at + 1], &known[at], (nknown - at) * sizeof(*k));
	known[at].value = copy;
	known[at].len = len;
	nknown++;
	set_first();
	return 0;
}

void secret_reset(void)
{
	for (size_t i = 0; i < nknown; i++) {
		/* volatile: the wipe must not be optimised away before free(). */
		volatile char *p = known[i].value;

		for (size_t j = 0; j < known[i].len; j++)
			p[j] = 0;
		free(known[i].value);
	}
	free(known);
	known = NULL;
	nknown = 0;
	set_first();
}

bool secret_name(const char *name, size_t n)
{
	static const char *const words[] = { "KEY", "TOKEN", "SECRET", "PASSWORD", NULL };

	for (size_t w = 0; words[w] != NULL; w++) {
		size_t k = strlen(words[w]);

		for (size_t i = 0; i + k <= n; i++) {
			size_t j;

			for (j = 0; j < k && (name[i + j] & ~0x20) == words[w][j]; j++)
				;
			if (j == k)
				return true;
		}
	}
	return false;
}

/* Where needle[0..nn) first stands in hay[0..hn), or -1. */
static ptrdiff_t find(const char *hay, size_t hn, const char *needle, size_t nn)
{
	const char *p = hay, *end = hay + hn;

	while (nn > 0 && (size_t)(end - p) >= nn) {
		p = memchr(p, needle[0], (size_t)(end - p) - nn + 1);
		if (p == NULL)
			return -1;
		if (memcmp(p, needle, nn) == 0)
			return p - hay;
		p++;
	}
	return -1;
}

bool secret_known_in(const char *text, size_t len)
{
	for (size_t i = 0; i < nknown; i++)
		if (find(text, len, known[i].value, known[i].len) >= 0)
			return true;
	return false;
}

/* The finder. `final`: the text ends at n; otherwise more may follow, and
 * what may be the start of a key is a hold. */

static enum found_kind at_known(const char *s, size_t n, size_t i, bool final, struct found *f)
{
	size_t avail = n - i;

	for (size_t k = 0; k < nknown; k++) {
		const struct known *key = &known[k];

		if (key->value[0] != s[i])
			continue;
		if (key->len > avail) {
			if (!final && memcmp(s + i, key->value, avail) == 0) {
				f->start = i;
				return FOUND_HOLD;
			}
			continue;
		}
		if (memcmp(s + i, key->value, key->len) == 0) {
			f->start = i;
			f->end = i + key->len;
			f->swallow = SHAPE_NONE;
			return FOUND_MASK;
		}
	}
	return FOUND_NONE;
}

static enum found_kind at_shape(const char *s, size_t n, size_t i, bool final, struct found *f)
{
	for (size_t k = 0; k < NSHAPES; k++) {
		const struct shape *sh = &shapes[k];
		size_t m = 0, j, e;

		while (m < sh->plen && i + m < n &&
		       (sh->kind == SHAPE_BEARER ? lower((unsigned char)s[i + m]) : s[i + m]) ==
			       sh->prefix[m])
			m++;
		if (m < sh->plen) {
			if (!final && i + m == n) {
				f->start = i;
				return FOUND_HOLD;
			}
			continue;
		}
		j = i + m;
		if (sh->kind == SHAPE_BEARER) {
			while (j < n && s[j] == ' ' && j - (i + m) <= BEARER_SPACES_MAX)
				j++;
			if (j - (i + m) > BEARER_SPACES_MAX || (j == i + m && j < n))
				continue;
			if (j == n) {
				if (final)
					continue;
				f->start = i;
				return FOUND_HOLD;
			}
		}
		for (e = j; e < n && in_token(sh->kind, (unsigned char)s[e]); e++)
			;
		if (e - j >= sh->min) {
			f->start = sh->kind == SHAPE_BEARER ? j : i;
			f->end = e;
			f->swallow = !final && e == n ? sh->kind : SHAPE_NONE;
			return FOUND_MASK;
		}
		if (!final && e == n) {
			f->start = i;
			return FOUND_HOLD;
		}
	}
	return FOUND_NONE;
}

/* The first key, shaped token or hold in s[from..n); prev is the byte
 * before s[from] (-1: the text's start). */
static enum found_kind next_found(const char *s, size_t n, size_t from, int prev, bool final,
				  struct found *f)
{
	for (size_t i = from; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		enum found_kind k;

		if (first[c] == 0)
			continue;
		if ((first[c] & FIRST_KNOWN) && (k = at_known(s, n, i, final, f)) != FOUND_NONE)
			return k;
		if ((first[c] & FIRST_SHAPE) &&
		    !in_token(SHAPE_TOKEN, i > from ? (unsigned char)s[i - 1] : prev) &&
		    (k = at_shape(s, n, i, final, f)) != FOUND_NONE)
			return k;
	}
	return FOUND_NONE;
}

/* Appends src[0..len) at out[*o], within cap; a text piece is cut only at
 * a character boundary. out may overlap src from below. Returns false once
 * out is full. */
static bool put(char *out, size_t *o, size_t cap, const char *src, size_t len, bool text)
{
	bool fits = len <= cap - *o;

	if (!fits) {
		len = cap - *o;
		while (text && len > 0 && ((unsigned char)src[len] & 0xC0) == 0x80)
			len--;
	}
	memmove(out + *o, src, len);
	*o += len;
	return fits;
}

struct run {
	size_t used;    /* input consumed: all of it, or up to the hold */
	int prev;       /* the byte before the hold (or before the end) */
	int swallow;    /* the last mask cut a token at the text's end: its kind */
	bool masked;
};

/* Masks s[0..n) into out[0..cap) and returns the bytes written. out may be
 * s (writes never pass reads: a mask is shorter than what it replaces). */
static size_t run(const char *s, size_t n, int prev, bool final, char *out, size_t cap,
		  struct run *r)
{
	size_t at = 0, o = 0;
	struct found f;
	enum found_kind k;

	r->swallow = SHAPE_NONE;
	r->masked = false;
	while ((k = next_found(s, n, at, prev, final, &f)) != FOUND_NONE) {
		/* Bytes below `at` may be overwritten already; `prev` holds s[at - 1]. */
		int before = f.start > at ? (unsigned char)s[f.start - 1] : prev;

		if (k == FOUND_HOLD) {
			put(out, &o, cap, s + at, f.start - at, true);
			r->used = f.start;
			r->prev = before;
			return o;
		}
		prev = (unsigned char)s[f.end - 1];
		r->masked = true;
		r->swallow = f.swallow;
		if (!put(out, &o, cap, s + at, f.start - at, true) ||
		    !put(out, &o, cap, SECRET_MASK, MASK_LEN, false)) {
			r->used = n;
			return o;
		}
		at = f.end;
	}
	r->prev = n > at ? (unsigned char)s[n - 1] : prev;
	put(out, &o, cap, s + at, n - at, true);
	r->used = n;
	return o;
}

bool secret_mask(char *text, size_t *len)
{
	struct run r;

	*len = run(text, *len, -1, true, text, *len, &r);
	return r.masked;
}

bool secret_mask_str(char *text)
{
	size_t len = strlen(text);
	bool masked = secret_mask(text, &len);

	text[len] = '\0';
	return masked;
}

size_t secret_copy(char *out, size_t outlen, const char *text, size_t len)
{
	struct run r;
	size_t o;

	if (outlen == 0)
		return 0;
	o = run(text, len, -1, true, out, outlen - 1, &r);
	out[o] = '\0';
	return o;
}

bool secret_mask_json(json_t *v)
{
	struct found f;
	const char *key;
	json_t *item;
	size_t i;
	bool masked = false;

	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		size_t n = json_string_length(v);
		char *copy;

		if (next_found(s, n, 0, -1, true, &f) == FOUND_NONE)
			return false;
		copy = malloc(n + 1);
		if (copy == NULL)
			return json_string_set(v, SECRET_MASK) == 0;
		memcpy(copy, s, n);
		secret_mask(copy, &n);
		json_string_setn(v, copy, n);
		free(copy);
		return true;
	}
	if (json_is_array(v)) {
		json_array_foreach(v, i, item)
			masked = secret_mask_json(item) || masked;
	} else if (json_is_object(v)) {
		json_object_foreach(v, key, item)
			masked = secret_mask_json(item) || masked;
	}
	return masked;
}

/* Streaming. */

void secret_stream_init(struct secret_stream *self)
{
	memset(self, 0, sizeof(*self));
	self->prev = -1;
}

void secret_stream_release(struct secret_stream *self)
{
	free(self->buf);
	secret_stream_init(self);
}

static int reserve(struct secret_stream *self, size_t n)
{
	char *p;
	size_t cap = self->cap ? self->cap : 256;

	if (n <= self->cap)
		return 0;
	while (cap < n)
		cap = cap > SIZE_MAX / 2 ? n : cap * 2;
	p = realloc(self->buf, cap);
	if (p == NULL)
		return -1;
	self->buf = p;
	self->cap = cap;
	return 0;
}

/* Without memory to hold anything: masked as a finished text, piece by
 * piece (a key cut by the piece's end may then show in part). */
static void emit_pieces(const char *s, size_t n, int prev, secret_emit_fn emit, void *ctx)
{
	size_t at = 0;
	struct found f;

	while (next_found(s, n, at, prev, true, &f) == FOUND_MASK) {
		if (f.start > at)
			emit(ctx, s + at, f.start - at);
		emit(ctx, SECRET_MASK, MASK_LEN);
		prev = (unsigned char)s[f.end - 1];
		at = f.end;
	}
	if (n > at)
		emit(ctx, s + at, n - at);
}

void secret_stream_feed(struct secret_stream *self, const char *text, size_t len,
			secret_emit_fn emit, void *ctx)
{
	struct found f;
	struct run r;
	size_t n, o;

	if (self->swallow != SHAPE_NONE) {
		size_t k = 0;

		while (k < len && in_token(self->swallow, (unsigned char)text[k]))
			k++;
		if (k > 0)
			self->prev = (unsigned char)text[k - 1];
		if (k == len)
			return;
		self->swallow = SHAPE_NONE;
		text += k;
		len -= k;
	}
	if (len == 0)
		return;
	/* The everyday piece: nothing held, nothing found, passed on as is. */
	if (self->held == 0 && next_found(text, len, 0, self->prev, false, &f) == FOUND_NONE) {
		self->prev = (unsigned char)text[len - 1];
		emit(ctx, text, len);
		return;
	}
	if (self->start > 0) {
		memmove(self->buf, self->buf + self->start, self->held);
		self->start = 0;
	}
	if (reserve(self, self->held + len) != 0) {
		int prev = self->prev;

		o = self->held;
		self->held = 0;
		self->prev = (unsigned char)text[len - 1];
		emit_pieces(self->buf, o, prev, emit, ctx);
		emit_pieces(text, len, o > 0 ? (unsigned char)self->buf[o - 1] : prev, emit, ctx);
		return;
	}
	memcpy(self->buf + self->held, text, len);
	n = self->held + len;
	o = run(self->buf, n, self->prev, false, self->buf, n, &r);
	/* run() wrote only below r.used: the held tail stays where it is. */
	self->start = r.used;
	self->held = n - r.used;
	self->prev = r.prev;
	self->swallow = r.swallow;
	if (o > 0)
		emit(ctx, self->buf, o);
}

void secret_stream_end(struct secret_stream *self, secret_emit_fn emit, void *ctx)
{
	struct run r;
	size_t o = 0;

	if (self->held > 0)
		o = run(self->buf + self->start, self->held, self->prev, true, self->buf, self->held, &r);
	self->start = 0;
	self->held = 0;
	self->prev = -1;
	self->swallow = SHAPE_NONE;
	if (o > 0)
		emit(ctx, self->buf, o);
}
