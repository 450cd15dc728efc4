/* secret — the one masker for every string that leaves the process.
 *
 * It knows every configured key and credential (a process-wide registry the
 * providers fill when they load their keys: HTTP apiKey / apiKeyEnv values,
 * secret-looking header values, an agent CLI's secret env values) and,
 * besides, tokens shaped like a key that it was never told about:
 *
 *   sk-…    20+ more of [A-Za-z0-9_-] (OpenAI sk-/sk-proj-, Anthropic
 *           sk-ant-, OpenRouter sk-or-)
 *   AIza…   30+ more (Google)
 *   xai-…   20+ more (xAI)
 *   gsk_…   20+ more (Groq)
 *   Bearer  (any case) then spaces and a token of 16+ of
 *           [A-Za-z0-9._~+/=-]; the token is masked, "Bearer " stays
 *
 * A shaped token starts where the byte before it is not one of
 * [A-Za-z0-9_-] and is masked whole (the full run of those characters); a
 * known key is masked wherever it stands. Each becomes "***". Masking comes
 * before any cut: secret_copy() and the streaming masker see a key whole
 * even when the cut or a chunk boundary falls inside it.
 *
 * Everything here runs on the loop's thread; the registry is not locked. */
#ifndef RETRYD_SECRET_H
#define RETRYD_SECRET_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* What a masked key or token becomes. */
#define SECRET_MASK "***"
/* Values shorter than this are not taken as secrets: placeholders such as
 * "ollama" or "EMPTY" would otherwise mask ordinary words everywhere. */
#define SECRET_MIN_LEN 8

/* Adds value (borrowed, copied) to the keys masked everywhere from now on.
 * A value already known, shorter than SECRET_MIN_LEN, not well-formed
 * UTF-8 or with a NUL byte is ignored. Returns 0, or -1 when memory ran
 * out (the value is then not known). */
int secret_register(const char *value);
/* Forgets every registered key (wiping the copies). For tests and exit. */
void secret_reset(void);

/* Whether an environment variable or header named name[0..n) holds a
 * secret by its name: it contains KEY, TOKEN, SECRET, PASSWORD, PASSWD,
 * CREDENTIAL, or AUTH as a word of the name (any case: PROXY_AUTH and
 * AUTHORIZATION are, GIT_AUTHOR_NAME, XAUTHORITY and SSH_AUTH_SOCK, a
 * socket's path, are not). */
bool secret_name(const char *name, size_t n);

/* Whether text[0..len) holds a registered key (shapes are not looked at:
 * this is the cheap test for the hot path). */
bool secret_known_in(const char *text, size_t len);

/* Masks every registered key and shaped token in text[0..*len), in place,
 * and updates *len (the text only shrinks; bytes past the new length are
 * left as they are). Returns whether anything was masked. */
bool secret_mask(char *text, size_t *len);
/* The same for a NUL-terminated text. */
bool secret_mask_str(char *text);

/* Copies text[0..len) to out masked, then cut to at most outlen - 1 bytes
 * without splitting a UTF-8 character; NUL-terminated. A key that the cut
 * falls inside is masked whole first, so no piece of it is left. Returns
 * the bytes written. outlen 0 writes nothing. */
size_t secret_copy(char *out, size_t outlen, const char *text, size_t len);

/* The same for a serialized JSON text (a line going to stdout or the
 * session file), in place: only inside string values. Object keys and the
 * values of the protocol's own fields (type, role, id, command,
 * stopReason, ...) are left as they are, so a registered key equal to a
 * word or an id cannot rename a field, break a correlation or make two
 * keys of one object the same. */
bool secret_mask_json_text(char *text, size_t *len);

/* Masks every string inside v (borrowed; changed in place; object keys are
 * left alone). Returns whether anything was masked. */
bool secret_mask_json(json_t *v);
/* "scheme://user:password@host/..." as shown: what stands before the '@'
 * becomes SECRET_MASK. Returns a new string (free it), or NULL when the
 * URL has no user part (or memory ran out): show it as it is. */
char *secret_url_shown(const char *url);

/* A streaming masker for text that arrives in pieces (a text block's
 * deltas, a CLI's stderr line). A piece is passed on at once, masked,
 * except its tail when that tail may be the start of a key — a proper
 * prefix of a registered key, or a token that may still grow into a shaped
 * one: that much (at most the longest key less one byte, or a shape's
 * prefix and minimum length) is held back and released with the next
 * piece or at the end. A shaped token that reaches its minimum length
 * while unfinished is sent as "***" at once and the rest of it is dropped
 * as it comes. The hold always starts at a character boundary. After the
 * first few pieces nothing is allocated per piece. */
/* A shape whose public prefix (or "Bearer" and its spaces) a piece ended
 * in, or whose held token it begins: shape index + 1 (0: none), prefix
 * bytes matched, spaces after it. */
struct secret_pend {
	int shape;
	unsigned char m, spaces;
};

/* The bytes a piece follows, as far back as a JSON escape before a key
 * can reach (\uXXXX: six): from the text's start or the last mask's end
 * on, since a whole text is looked back into no further either. */
struct secret_back {
	unsigned char n;  /* bytes in b, oldest first */
	char b[6];
	bool odd;         /* the bytes before b end with an odd run of backslashes */
};

struct secret_stream {
	char *buf;       /* owned: room to work; the held bytes are buf[start..start + held) */
	size_t start, held, cap;
	int prev;        /* the byte before the held ones (-1: none yet) */
	struct secret_back back; /* the bytes before the held ones */
	int swallow;     /* dropping the rest of a masked token: its kind, or 0 */
	struct secret_pend pend;
};

/* Receives masked text (borrowed for the call; never empty). */
typedef void (*secret_emit_fn)(void *ctx, const char *text, size_t len);

void secret_stream_init(struct secret_stream *self);
void secret_stream_release(struct secret_stream *self);
/* text: borrowed. emit may be called once (or, when memory runs out, a
 * few times) per piece, or not at all when the whole piece is held. The
 * stream's state is settled before emit is called, so emit may end the
 * stream (secret_stream_end) from inside. */
void secret_stream_feed(struct secret_stream *self, const char *text, size_t len,
			secret_emit_fn emit, void *ctx);
/* The end of the text: releases what is held (masked as a finished text)
 * and makes the stream ready for a new text. */
void secret_stream_end(struct secret_stream *self, secret_emit_fn emit, void *ctx);

/* A short, stable name for a credential that can be shared (fleet state,
 * logs): 16 hex digits of a salted 64-bit hash of `secret` (borrowed),
 * never the secret itself. out: 17 bytes with the NUL. */
void secret_fingerprint(const char *secret, char out[17]);

#endif
