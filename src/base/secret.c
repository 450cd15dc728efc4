#include "base/secret.h"

#include <ctype.h>
#include <stdio.h>

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
	size_t anchor;  /* the offset of its rarest byte: what secret_known_in() looks for */
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

/* MASK: s[start..end) becomes "***". HOLD: s[start..) may begin a key and
 * waits for more. PREFIX: the text ends inside a shape's (public) prefix,
 * which goes out; the next piece continues it (pend). */
enum found_kind { FOUND_NONE, FOUND_MASK, FOUND_HOLD, FOUND_PREFIX };

struct found {
	size_t start, end;
	int swallow;            /* MASK: a shaped token that the text's end cut: its kind */
	struct secret_pend pend; /* HOLD of a shape's token, PREFIX: where the shape stands */
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

/* How common a byte is in what passes here (English text, JSON, SSE
 * framing): lower is rarer. Only the order matters. */
static int commonness(unsigned char c)
{
	static const char letters[] = "zqxjkvbpygfwmucldrhsnioate"; /* rare to common */

	if (c >= 'a' && c <= 'z')
		return 10 + (int)(strchr(letters, c) - letters);
	if (c >= 'A' && c <= 'Z')
		return 2;
	if (c >= '0' && c <= '9')
		return 30;
	if (strchr(" \":,{}[]", c) != NULL)
		return 40;
	if (c == '-' || c == '_' || c == '.' || c == '/')
		return 15;
	return c >= 0x80 ? 1 : 3;
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
	known[at].anchor = 0;
	for (size_t i = 1; i < len; i++)
		if (commonness((unsigned char)value[i]) <
		    commonness((unsigned char)value[known[at].anchor]))
			known[at].anchor = i;
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

/* Whether word (upper case) stands at name[i..n), any case. */
static bool word_at(const char *name, size_t n, size_t i, const char *word)
{
	size_t k = strlen(word), j;

	if (i + k > n)
		return false;
	for (j = 0; j < k && (name[i + j] & ~0x20) == word[j]; j++)
		;
	return j == k;
}

static bool name_sep(int c)
{
	return c == '_' || c == '-' || c == '.';
}

/* AUTH names a credential only as a word of the name (PROXY_AUTH,
 * AUTH_HEADER, AUTHORIZATION): not inside a longer word (XAUTHORITY,
 * GIT_AUTHOR_NAME), and not in a name for where something is (SSH_AUTH_SOCK,
 * KRB5_AUTH_PATH: a socket or a path, not a secret). */
static bool auth_word_at(const char *name, size_t n, size_t i)
{
	static const char *const places[] = { "SOCK", "SOCKET", "PATH", "FILE", "DIR", NULL };
	size_t e = i + 4, start = n;

	if (!word_at(name, n, i, "AUTH") || (i > 0 && !name_sep(name[i - 1])))
		return false;
	if (word_at(name, n, e, "ORIZATION") || word_at(name, n, e, "ORISATION"))
		e += 9;
	else if (e < n && !name_sep(name[e]))
		return false;
	while (start > 0 && !name_sep(name[start - 1]))
		start--;
	for (size_t k = 0; places[k] != NULL; k++)
		if (n - start == strlen(places[k]) && start > 0 && word_at(name, n, start, places[k]))
			return false;
	return true;
}

bool secret_name(const char *name, size_t n)
{
	static const char *const words[] = {
		"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", NULL,
	};

	for (size_t i = 0; i < n; i++) {
		for (size_t w = 0; words[w] != NULL; w++)
			if (word_at(name, n, i, words[w]))
				return true;
		if (auth_word_at(name, n, i))
			return true;
	}
	return false;
}

/* Whether key stands in text[0..len): its rarest byte is looked for first,
 * so ordinary text costs one memchr() and few compares. */
static bool known_in(const struct known *key, const char *text, size_t len)
{
	const char *p, *end = text + len;
	char c = key->value[key->anchor];

	if (len < key->len)
		return false;
	p = text + key->anchor;
	end = text + len - (key->len - key->anchor - 1);
	while (p < end && (p = memchr(p, c, (size_t)(end - p))) != NULL) {
		if (memcmp(p - key->anchor, key->value, key->len) == 0)
			return true;
		p++;
	}
	return false;
}

bool secret_known_in(const char *text, size_t len)
{
	for (size_t i = 0; i < nknown; i++)
		if (known_in(&known[i], text, len))
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
				memset(&f->pend, 0, sizeof(f->pend));
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

static bool prefix_char(const struct shape *sh, char c, size_t m)
{
	return (sh->kind == SHAPE_BEARER ? lower((unsigned char)c) : c) == sh->prefix[m];
}

/* Shape k at s[i..n), its prefix matched m bytes (and, for bearer, sp
 * spaces) before s[i]. Only the token after the prefix is masked: the
 * prefix is public and says what kind of key stood there. */
static enum found_kind shape_from(const char *s, size_t n, size_t i, size_t k, size_t m,
				  size_t sp, bool final, struct found *f)
{
	const struct shape *sh = &shapes[k];
	size_t j = i, e;

	while (m < sh->plen && j < n && prefix_char(sh, s[j], m)) {
		m++;
		j++;
	}
	f->pend.shape = (int)k + 1;
	f->pend.m = (unsigned char)m;
	if (m < sh->plen) {
		f->pend.spaces = 0;
		return !final && j == n ? FOUND_PREFIX : FOUND_NONE;
	}
	if (sh->kind == SHAPE_BEARER) {
		while (j < n && s[j] == ' ' && sp <= BEARER_SPACES_MAX) {
			sp++;
			j++;
		}
		f->pend.spaces = (unsigned char)sp;
		if (sp > BEARER_SPACES_MAX)
			return FOUND_NONE;
		if (j == n)
			return final ? FOUND_NONE : FOUND_PREFIX;
		if (sp == 0)
			return FOUND_NONE;
	}
	for (e = j; e < n && in_token(sh->kind, (unsigned char)s[e]); e++)
		;
	f->start = j;
	if (e - j >= sh->min) {
		f->end = e;
		f->swallow = !final && e == n ? sh->kind : SHAPE_NONE;
		return FOUND_MASK;
	}
	return !final && e == n ? FOUND_HOLD : FOUND_NONE;
}

static enum found_kind at_shape(const char *s, size_t n, size_t i, bool final, struct found *f)
{
	for (size_t k = 0; k < NSHAPES; k++) {
		enum found_kind r;

		if (!prefix_char(&shapes[k], s[i], 0))
			continue;
		r = shape_from(s, n, i, k, 0, 0, final, f);
		if (r != FOUND_NONE)
			return r;
	}
	return FOUND_NONE;
}

/* What s[i - k] is, looking back from s[i] no further than s[from] —
 * and, when from is 0, into the bytes the text follows (back, or NULL).
 * -1: nothing known there. */
struct look {
	const char *s;
	size_t from;
	const struct secret_back *back;
};

static int look_at(const struct look *l, size_t i, size_t k)
{
	size_t before;

	if (k <= i && i - k >= l->from)
		return (unsigned char)l->s[i - k];
	if (l->from > 0 || l->back == NULL || k <= i)
		return -1;
	before = k - i;  /* 1: the last byte of back */
	return before <= l->back->n ? (unsigned char)l->back->b[l->back->n - before] : -1;
}

/* Whether the byte k before s[i] is a backslash that an odd run of them
 * ends (it opens an escape; an even run is escaped ones). */
static bool opens_escape(const struct look *l, size_t i, size_t k)
{
	size_t bs = 0;

	while (look_at(l, i, k) == '\\') {
		bs++;
		k++;
	}
	/* The run reached past what back holds: its parity goes on there. */
	if (bs > 0 && l->from == 0 && l->back != NULL && k > i && k - i > l->back->n &&
	    l->back->odd)
		bs++;
	return bs % 2 == 1;
}

/* Whether s[i] follows a JSON backslash escape (\n \t \r \" \\ \/ \b \f
 * or \uXXXX) that lies after s[from] (or, from 0, in back too):
 * serialized JSON is masked as text, and there a newline before a key is
 * the two bytes backslash, n, whose n would otherwise read as part of the
 * token. */
static bool after_escape(const struct look *l, size_t i)
{
	int c;

	/* Every byte it reads lies in s: the backslash first, which is rare
	 * (the everyday call is a shape's first letter inside a word). */
	if (i >= l->from + 6 && l->s[i - 2] != '\\' && l->s[i - 6] != '\\')
		return false;
	c = look_at(l, i, 1);
	if (c > 0 && strchr("ntr\"\\/bf", c) != NULL && opens_escape(l, i, 2))
		return true;
	if (look_at(l, i, 5) != 'u')
		return false;
	for (size_t k = 1; k <= 4; k++)
		if (!isxdigit(look_at(l, i, k)))
			return false;
	return opens_escape(l, i, 6);
}

/* back followed by s[0..n): the bytes a later piece follows. */
static void back_push(struct secret_back *back, const char *s, size_t n)
{
	size_t keep = sizeof(back->b), j, bs = 0, tail = n < keep ? n : keep;

	/* No backslash among the last bytes (the everyday piece): no escape
	 * reaches past them, which an empty back says as well. */
	if ((n >= keep || back->n == 0) && memchr(s + n - tail, '\\', tail) == NULL) {
		back->n = 0;
		back->odd = false;
		return;
	}
	if (n < keep) {
		for (size_t i = 0; i < n; i++) {
			if (back->n == keep) {
				back->odd = back->b[0] == '\\' ? !back->odd : false;
				memmove(back->b, back->b + 1, keep - 1);
				back->n--;
			}
			back->b[back->n++] = s[i];
		}
		return;
	}
	/* The run of backslashes that ends just before the kept bytes. */
	for (j = n - keep; j > 0 && s[j - 1] == '\\'; j--)
		bs++;
	if (j == 0) {
		size_t m = back->n;

		while (m > 0 && back->b[m - 1] == '\\') {
			bs++;
			m--;
		}
		if (m == 0 && back->odd)
			bs++;
	}
	back->odd = bs % 2 == 1;
	memcpy(back->b, s + n - keep, keep);
	back->n = (unsigned char)keep;
}

/* The first key, shaped token, hold or open prefix in s[from..n); prev is
 * the byte before s[from] (-1: the text's start); pend (or NULL): a shape
 * whose prefix the previous piece left open before s[0]; back (or NULL):
 * the bytes before s[0], looked into while from is 0. */
static enum found_kind next_found(const char *s, size_t n, size_t from, int prev, bool final,
				  const struct secret_pend *pend, const struct secret_back *back,
				  struct found *f)
{
	struct look l = { s, from, back };

	for (size_t i = from; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		bool cont = i == 0 && pend != NULL && pend->shape != 0, continued = false;
		enum found_kind k = FOUND_NONE;

		if (first[c] == 0 && !cont)
			continue;
		memset(&f->pend, 0, sizeof(f->pend));
		/* A shape the previous piece opened began before s[0]: it comes
		 * first, as it would in the whole text. */
		if (cont) {
			k = shape_from(s, n, 0, (size_t)pend->shape - 1, pend->m, pend->spaces, final, f);
			continued = k != FOUND_NONE;
		}
		if (k == FOUND_NONE && (first[c] & FIRST_KNOWN) &&
		    (k = at_known(s, n, i, final, f)) != FOUND_NONE)
			return k;
		if (k == FOUND_NONE && (first[c] & FIRST_SHAPE) &&
		    (!in_token(SHAPE_TOKEN, i > from ? (unsigned char)s[i - 1] : prev) ||
		     after_escape(&l, i)))
			k = at_shape(s, n, i, final, f);
		if (k == FOUND_PREFIX || k == FOUND_HOLD) {
			/* An open shape goes out (its prefix) or waits (its token)
			 * from its start on when a registered key may stand inside
			 * it: the key is then found whole once the shape is decided. */
			struct found g;

			for (size_t j = continued ? i : i + 1; j < n; j++) {
				if ((first[(unsigned char)s[j]] & FIRST_KNOWN) &&
				    at_known(s, n, j, final, &g) != FOUND_NONE) {
					f->start = i;
					if (continued)
						f->pend = *pend;
					else
						memset(&f->pend, 0, sizeof(f->pend));
					return FOUND_HOLD;
				}
			}
		}
		if (k != FOUND_NONE)
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
	struct secret_pend pend; /* a shape open at the end (held token or prefix) */
	struct secret_back back; /* the bytes before the hold (or the end); set only
				  * when run() was given the bytes before s */
};

/* r->back: the bytes s[at..end) follows on, read before they are written
 * over (back, when nothing was masked yet, else from the mask's end).
 * Only a stream carries them on: a whole text (back NULL) leaves it unset. */
static void run_back(struct run *r, const struct secret_back *back, const char *s, size_t at,
		     size_t end)
{
	if (back == NULL)
		return;
	if (r->masked)
		memset(&r->back, 0, sizeof(r->back));
	else
		r->back = *back;
	back_push(&r->back, s + at, end - at);
}

/* Masks s[0..n) into out[0..cap) and returns the bytes written. out may be
 * s (writes never pass reads: a mask is shorter than what it replaces).
 * back (or NULL): the bytes s follows. */
static size_t run(const char *s, size_t n, int prev, bool final, const struct secret_pend *pend,
		  const struct secret_back *back, char *out, size_t cap, struct run *r)
{
	size_t at = 0, o = 0;
	struct found f;
	enum found_kind k;

	r->swallow = SHAPE_NONE;
	r->masked = false;
	memset(&r->pend, 0, sizeof(r->pend));
	while ((k = next_found(s, n, at, prev, final, pend, back, &f)) != FOUND_NONE) {
		if (k == FOUND_PREFIX) {
			r->pend = f.pend;
			break;
		}
		if (k == FOUND_HOLD) {
			/* Bytes below `at` may be overwritten; `prev` holds s[at - 1]. */
			r->prev = f.start > at ? (unsigned char)s[f.start - 1] : prev;
			run_back(r, back, s, at, f.start);
			put(out, &o, cap, s + at, f.start - at, true);
			r->used = f.start;
			r->pend = f.pend;
			return o;
		}
		prev = (unsigned char)s[f.end - 1];
		r->masked = true;
		r->swallow = f.swallow;
		if (!put(out, &o, cap, s + at, f.start - at, true) ||
		    !put(out, &o, cap, SECRET_MASK, MASK_LEN, false)) {
			r->used = n;
			memset(&r->back, 0, sizeof(r->back));
			return o;
		}
		at = f.end;
	}
	r->prev = n > at ? (unsigned char)s[n - 1] : prev;
	run_back(r, back, s, at, n);
	put(out, &o, cap, s + at, n - at, true);
	r->used = n;
	return o;
}

bool secret_mask(char *text, size_t *len)
{
	struct run r;

	*len = run(text, *len, -1, true, NULL, NULL, text, *len, &r);
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
	o = run(text, len, -1, true, NULL, NULL, out, outlen - 1, &r);
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

		if (next_found(s, n, 0, -1, true, NULL, NULL, &f) == FOUND_NONE)
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

/* The protocol's own fields: their values name and correlate things
 * (a role, a command, an id) and are never a secret the user typed; a
 * registered key that happens to equal one must not rename it. */
static const char *const protocol_fields[] = {
	"type", "role", "id", "command", "stopReason", "api", "provider", "model", "parentId",
	"sessionId", "toolCallId", "responseId", "messageId", NULL,
};

static bool protocol_field(const char *name, size_t n)
{
	for (size_t k = 0; protocol_fields[k] != NULL; k++)
		if (strlen(protocol_fields[k]) == n && memcmp(protocol_fields[k], name, n) == 0)
			return true;
	return false;
}

/* Where the JSON string opened at s[i] (a quote) closes, or n. */
static size_t string_end(const char *s, size_t n, size_t i)
{
	for (size_t j = i + 1; j < n; j++) {
		if (s[j] == '\\')
			j++;
		else if (s[j] == '"')
			return j;
	}
	return n;
}

bool secret_mask_json_text(char *text, size_t *len)
{
	size_t n = *len, i = 0, o = 0, key = 0, keylen = 0;
	bool after_key = false, masked = false;

	while (i < n) {
		size_t j, k;
		struct run r;

		if (text[i] != '"') {
			if (text[i] == ',' || text[i] == '{' || text[i] == '[')
				after_key = false;
			text[o++] = text[i++];
			continue;
		}
		j = string_end(text, n, i);
		for (k = j + 1; k < n && (text[k] == ' ' || text[k] == '\n' || text[k] == '\t'); k++)
			;
		if (j < n && k < n && text[k] == ':') {
			/* An object key: kept, and its value judged by it. */
			memmove(text + o, text + i, j + 1 - i);
			key = o + 1;
			keylen = j - i - 1;
			o += j + 1 - i;
			i = j + 1;
			after_key = true;
			continue;
		}
		text[o++] = '"';
		if (after_key && protocol_field(text + key, keylen)) {
			memmove(text + o, text + i + 1, j - i - 1);
			o += j - i - 1;
		} else {
			o += run(text + i + 1, j - i - 1, '"', true, NULL, NULL, text + o, j - i - 1, &r);
			masked = masked || r.masked;
		}
		after_key = false;
		if (j < n)
			text[o++] = '"';
		i = j + 1;
	}
	*len = o;
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
static void emit_pieces(const char *s, size_t n, int prev, const struct secret_pend *pend,
			const struct secret_back *back, secret_emit_fn emit, void *ctx)
{
	size_t at = 0;
	struct found f;

	while (next_found(s, n, at, prev, true, pend, back, &f) == FOUND_MASK) {
		if (f.start > at)
			emit(ctx, s + at, f.start - at);
		emit(ctx, SECRET_MASK, MASK_LEN);
		prev = (unsigned char)s[f.end - 1];
		at = f.end;
	}
	if (n > at)
		emit(ctx, s + at, n - at);
}

/* A piece that holds, masks or follows a hold: worked on in the buffer. */
static void feed_buffered(struct secret_stream *self, const char *text, size_t len,
			  secret_emit_fn emit, void *ctx)
{
	struct run r;
	size_t n, o;

	if (self->start > 0) {
		memmove(self->buf, self->buf + self->start, self->held);
		self->start = 0;
	}
	if (reserve(self, self->held + len) != 0) {
		int prev = self->prev;
		struct secret_pend pend = self->pend;
		struct secret_back back = self->back;

		o = self->held;
		self->held = 0;
		self->prev = (unsigned char)text[len - 1];
		memset(&self->pend, 0, sizeof(self->pend));
		back_push(&self->back, self->buf, o);
		back_push(&self->back, text, len);
		emit_pieces(self->buf, o, prev, &pend, &back, emit, ctx);
		emit_pieces(text, len, o > 0 ? (unsigned char)self->buf[o - 1] : prev, o > 0 ? NULL : &pend,
			    o > 0 ? NULL : &back, emit, ctx);
		return;
	}
	memcpy(self->buf + self->held, text, len);
	n = self->held + len;
	o = run(self->buf, n, self->prev, false, &self->pend, &self->back, self->buf, n, &r);
	/* run() wrote only below r.used: the held tail stays where it is. */
	self->start = r.used;
	self->held = n - r.used;
	self->prev = r.prev;
	self->swallow = r.swallow;
	self->pend = r.pend;
	self->back = r.back;
	if (o > 0)
		emit(ctx, self->buf, o);
}

/* A piece with a byte that may start something. Kept out of line, so
 * the everyday piece's path stays short. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void feed_found(struct secret_stream *self, const char *text, size_t len,
		       secret_emit_fn emit, void *ctx)
{
	if (self->held == 0) {
		struct found f;
		enum found_kind k;

		/* From the piece's start: the bytes before the one that may
		 * start something start nothing, but an escape among them makes
		 * a boundary. */
		k = next_found(text, len, 0, self->prev, false, &self->pend, &self->back, &f);
		/* Nothing found, or only an open prefix at its end: as is. */
		if (k == FOUND_NONE || k == FOUND_PREFIX) {
			self->prev = (unsigned char)text[len - 1];
			back_push(&self->back, text, len);
			if (k == FOUND_PREFIX)
				self->pend = f.pend;
			else
				memset(&self->pend, 0, sizeof(self->pend));
			emit(ctx, text, len);
			return;
		}
	}
	feed_buffered(self, text, len, emit, ctx);
}

void secret_stream_feed(struct secret_stream *self, const char *text, size_t len,
			secret_emit_fn emit, void *ctx)
{
	size_t i = 0;

	if (self->swallow != SHAPE_NONE) {
		while (i < len && in_token(self->swallow, (unsigned char)text[i]))
			i++;
		if (i > 0)
			self->prev = (unsigned char)text[i - 1];
		if (i == len)
			return;
		self->swallow = SHAPE_NONE;
		text += i;
		len -= i;
		i = 0;
	}
	if (len == 0)
		return;
	/* The everyday piece: nothing held, no byte that may start anything
	 * (checked here, without a call), passed on as is. */
	if (self->held == 0 && self->pend.shape == 0) {
		while (i < len && first[(unsigned char)text[i]] == 0)
			i++;
		if (i == len) {
			self->prev = (unsigned char)text[len - 1];
			back_push(&self->back, text, len);
			emit(ctx, text, len);
			return;
		}
	}
	feed_found(self, text, len, emit, ctx);
}

void secret_stream_end(struct secret_stream *self, secret_emit_fn emit, void *ctx)
{
	struct run r;
	size_t o = 0;

	if (self->held > 0)
		o = run(self->buf + self->start, self->held, self->prev, true, &self->pend, &self->back,
			self->buf, self->held, &r);
	self->start = 0;
	self->held = 0;
	self->prev = -1;
	self->swallow = SHAPE_NONE;
	memset(&self->pend, 0, sizeof(self->pend));
	memset(&self->back, 0, sizeof(self->back));
	if (o > 0)
		emit(ctx, self->buf, o);
}

/* FNV-1a, 64 bits, salted and folded once more so that short secrets
 * spread too. Not a MAC: the hash only has to name a key without showing
 * it; a secret's entropy is what keeps it from being guessed back. */
static uint64_t fp_mix(uint64_t h, const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

void secret_fingerprint(const char *secret, char out[17])
{
	static const char salt[] = "retryd fleet credential fingerprint v1";
	uint64_t h = fp_mix(14695981039346656037ULL, (const unsigned char *)salt, sizeof(salt));
	unsigned char bytes[8];

	h = fp_mix(h, (const unsigned char *)secret, strlen(secret));
	for (int i = 0; i < 8; i++)
		bytes[i] = (unsigned char)(h >> (8 * i));
	h = fp_mix(h, bytes, sizeof(bytes));
	snprintf(out, 17, "%016llx", (unsigned long long)h);
}

char *secret_url_shown(const char *url)
{
	const char *start = url != NULL ? strstr(url, "://") : NULL, *at;
	char *shown;
	size_t n;

	if (start == NULL)
		return NULL;
	start += 3;
	at = strchr(start, '@');
	if (at == NULL || memchr(start, '/', (size_t)(at - start)) != NULL)
		return NULL;
	n = (size_t)(start - url) + strlen(SECRET_MASK) + strlen(at) + 1;
	shown = malloc(n);
	if (shown != NULL)
		snprintf(shown, n, "%.*s%s%s", (int)(start - url), url, SECRET_MASK, at);
	return shown;
}
