/* The one masker (src/base/secret.c): registered keys, key shapes, the cut,
 * the streaming masker. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/secret.h"
#include "base/utf8.h"

START_TEST(test_a_url_shows_no_user_part)
{
	char *v = secret_url_shown("https://user:pw@gw.example:8443/v1");

	ck_assert_str_eq(v, "https://" SECRET_MASK "@gw.example:8443/v1");
	free(v);
	v = secret_url_shown("http://:only-a-password@127.0.0.1/x");
	ck_assert_str_eq(v, "http://" SECRET_MASK "@127.0.0.1/x");
	free(v);
	/* Nothing to hide: NULL, the URL is shown as it is. */
	ck_assert_ptr_null(secret_url_shown("https://api.example/v1"));
	ck_assert_ptr_null(secret_url_shown("https://api.example/v1/users/@me"));
	ck_assert_ptr_null(secret_url_shown(""));
	ck_assert_ptr_null(secret_url_shown(NULL));
}
END_TEST

Suite *secret_suite(void);

/* A key with no recognisable shape, 39 characters (the case). */
#define PLAIN "Zq8vPlainKeyWithoutAnyShape0123456789xy"
#define OPENAI "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
#define ANTHROPIC "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AA"
#define GOOGLE "AIzaSyA1bC2dE3fG4hI5jK6lM7nO8pQ9rS0tUvW"
#define XAI "xai-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
#define GROQ "gsk_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
#define JWT "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl"

static void teardown(void)
{
	secret_reset();
}

/* masked(text) as a new string. */
static char *masked(const char *text)
{
	size_t len = strlen(text);
	char *s = strdup(text);

	ck_assert_ptr_nonnull(s);
	secret_mask(s, &len);
	s[len] = '\0';
	return s;
}

static void assert_masked(const char *text, const char *want)
{
	char *got = masked(text);

	ck_assert_str_eq(got, want);
	free(got);
}

START_TEST(test_every_occurrence_of_a_registered_key_becomes_stars_and_the_text_shrinks)
{
	char text[] = "k3y-12345678 then k3y-12345678k3y-12345678 end k3y-12345678";
	size_t len = strlen(text);

	ck_assert_int_eq(secret_register("k3y-12345678"), 0);
	ck_assert(secret_mask(text, &len));
	text[len] = '\0';
	ck_assert_str_eq(text, "*** then ****** end ***");
	ck_assert_uint_eq(len, strlen("*** then ****** end ***"));
}
END_TEST

START_TEST(test_text_with_a_nul_byte_is_masked_past_it)
{
	char text[] = "a\0b k3y-abcdefgh c";
	size_t len = sizeof(text) - 1;

	secret_register("k3y-abcdefgh");
	ck_assert(secret_known_in(text, len));
	ck_assert(secret_mask(text, &len));
	ck_assert_uint_eq(len, 9);
	ck_assert_int_eq(memcmp(text, "a\0b *** c", 9), 0);
}
END_TEST

START_TEST(test_no_occurrence_or_a_too_short_value_changes_nothing)
{
	char text[] = "nothing secret here, not even ollama";
	size_t len = strlen(text);

	secret_register("zzzzzzzzzzzz");
	secret_register("ollama");  /* a placeholder, not a key */
	secret_register("secret");
	ck_assert(!secret_mask(text, &len));
	ck_assert(!secret_known_in(text, len));
	ck_assert_uint_eq(len, strlen("nothing secret here, not even ollama"));
	ck_assert_str_eq(text, "nothing secret here, not even ollama");
}
END_TEST

START_TEST(test_a_key_that_is_a_prefix_of_another_leaves_no_tail)
{
	secret_register("abcdefgh12");
	secret_register("abcdefgh12345678");
	assert_masked("x abcdefgh12345678 y abcdefgh12 z abcdefgh123", "x *** y *** z ***3");
}
END_TEST

START_TEST(test_every_documented_key_shape_is_masked_whole_without_being_registered)
{
	assert_masked("key " OPENAI ".", "key sk-***.");
	assert_masked("key=" ANTHROPIC "&x", "key=sk-***&x");
	assert_masked("\"" GOOGLE "\"", "\"AIza***\"");
	assert_masked("(" XAI ")", "(xai-***)");
	assert_masked(GROQ, "gsk_***");
	assert_masked("sk-e2e-7f3c9a1b5d2e8f40a6c4b1e9d7f2a3c5", "sk-***");
	/* Registered, the same key is masked whole. */
	secret_register("sk-e2e-7f3c9a1b5d2e8f40a6c4b1e9d7f2a3c5");
	assert_masked("sk-e2e-7f3c9a1b5d2e8f40a6c4b1e9d7f2a3c5", "***");
	assert_masked("Authorization: Bearer " JWT "==", "Authorization: Bearer ***");
	assert_masked("authorization: bearer  abcdefghijklmnop", "authorization: bearer  ***");
}
END_TEST

START_TEST(test_ordinary_words_and_retryd_ids_are_not_taken_for_keys)
{
	static const char *const plain[] = {
		"sk-learn is short; risk-assessment-framework-v2-0123456789 is not a key",
		"task-AbCdEfGhIjKlMnOpQrStUvWxYz0123 starts mid-word",
		"AIza is a name, xai-team too, gsk_ alone, Bearer of bad news",
		"the bearer bonds were sold; Bearer short",
		"0192f3a4-5b6c-7d8e-9f01-23456789abcd msg-0192f3a45b6c7d8e",
		"claude-sonnet-4-5-20250929 gpt-4.1-mini openai/gpt-4.1-mini",
		"{\"type\":\"session\",\"id\":\"0192f3a4-5b6c-7d8e-9f01-23456789abcd\"}",
		"héllo wörld 日本語",
	};

	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		assert_masked(plain[i], plain[i]);
}
END_TEST

START_TEST(test_json_strings_are_masked_in_place_and_keys_left_alone)
{
	json_t *v = json_pack("{s:s, s:[s, i], s:{s:s}}", "a", "key " OPENAI, "b",
			      "plain " PLAIN " end", 3, "c", "d", "fine");
	char *dump;

	secret_register(PLAIN);
	ck_assert(secret_mask_json(v));
	dump = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
	ck_assert_str_eq(dump, "{\"a\":\"key sk-***\",\"b\":[\"plain *** end\",3],\"c\":{\"d\":\"fine\"}}");
	ck_assert(!secret_mask_json(v));
	free(dump);
	json_decref(v);
}
END_TEST

/* ---- the cut ------------------------------------------------------------- */

/* Cut at every length: the result is the masked text cut there (on a
 * character boundary), never a piece of the key. */
static void check_every_cut(const char *text)
{
	size_t n = strlen(text);
	char *whole = masked(text);
	size_t wn = strlen(whole);
	char out[512];

	for (size_t outlen = 1; outlen <= wn + 8; outlen++) {
		size_t got = secret_copy(out, outlen, text, n), want = outlen - 1 < wn ? outlen - 1 : wn;

		while (want < wn && want > 0 && ((unsigned char)whole[want] & 0xC0) == 0x80)
			want--;
		ck_assert_uint_eq(got, want);
		ck_assert_int_eq(memcmp(out, whole, got), 0);
		ck_assert_uint_eq(out[got], '\0');
		ck_assert(utf8_valid(out, got));
		ck_assert_ptr_null(strstr(out, "Plain"));
		ck_assert_ptr_null(strstr(out, "sk-p"));
		ck_assert_ptr_null(strstr(out, "AIzaS"));
	}
	free(whole);
}

START_TEST(test_a_cut_inside_a_key_masks_it_whole_first)
{
	secret_register(PLAIN);
	check_every_cut("Incorrect API key provided: " PLAIN ". See the docs.");
	check_every_cut("é日" PLAIN "本語 " OPENAI " ü " GOOGLE " ok");
	ck_assert_uint_eq(secret_copy(NULL, 0, "x", 1), 0);
}
END_TEST

START_TEST(test_a_cut_never_splits_a_character)
{
	char out[8];

	ck_assert_uint_eq(secret_copy(out, 6, "ab日本", strlen("ab日本")), 5);
	ck_assert_str_eq(out, "ab日");
	ck_assert_uint_eq(secret_copy(out, 5, "ab日本", strlen("ab日本")), 2);
	ck_assert_str_eq(out, "ab");
}
END_TEST

/* ---- streaming ----------------------------------------------------------- */

struct sink {
	char out[4096];
	size_t len;
	size_t pieces;
	bool empty_piece, bad_utf8;
};

static void collect(void *ctx, const char *text, size_t len)
{
	struct sink *s = ctx;

	s->empty_piece |= len == 0;
	s->bad_utf8 |= !utf8_valid(text, len);
	ck_assert_uint_le(s->len + len, sizeof(s->out) - 1);
	memcpy(s->out + s->len, text, len);
	s->len += len;
	s->out[s->len] = '\0';
	s->pieces++;
}

/* What the stream makes of text cut at the given offsets. */
static void stream_pieces(struct secret_stream *st, const char *text, const size_t *cuts, size_t ncuts,
			  struct sink *sink)
{
	size_t at = 0, n = strlen(text);

	memset(sink, 0, sizeof(*sink));
	for (size_t i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : n;

		secret_stream_feed(st, text + at, end - at, collect, sink);
		/* Bounded hold: the longest key less one, or a shape's prefix,
		 * spaces and minimum. */
		ck_assert_uint_le(st->held, 64);
		at = end;
	}
	secret_stream_end(st, collect, sink);
	ck_assert(!sink->empty_piece);
}

static const char *const stream_texts[] = {
	"Your key is " PLAIN "! and " OPENAI " or " ANTHROPIC ".",
	"g=" GOOGLE ";x=" XAI ";q=" GROQ,
	"Authorization: Bearer " JWT " end",
	"é日" PLAIN "本 🎉 abcdefgh12 abcdefgh12345678 abcdefgh123",
	"no key at all, just bees and sk- and AI and xai and Bear",
	"ends in a key " OPENAI,
	"ends in a shorter " "abcdefgh12",
	"a key inside a shape's prefix: x sk-abcdefgh1 y, gsk-abcdefgh1",
	"the public prefix is not held: a b, a s, a Bear, bearer",
};

START_TEST(test_a_key_split_across_two_chunks_at_any_offset_is_masked_whole)
{
	struct secret_stream st;
	struct sink sink;

	secret_register(PLAIN);
	secret_register("abcdefgh12");
	secret_register("abcdefgh12345678");
	secret_register("k-abcdefgh1");
	secret_stream_init(&st);
	for (size_t t = 0; t < sizeof(stream_texts) / sizeof(stream_texts[0]); t++) {
		char *whole = masked(stream_texts[t]);

		for (size_t cut = 0; cut <= strlen(stream_texts[t]); cut++) {
			stream_pieces(&st, stream_texts[t], &cut, 1, &sink);
			ck_assert_str_eq(sink.out, whole);
		}
		free(whole);
	}
	secret_stream_release(&st);
}
END_TEST

START_TEST(test_a_key_fed_byte_by_byte_or_in_three_chunks_is_masked_whole)
{
	struct secret_stream st;
	struct sink sink;
	const char *text = "a " PLAIN " b " OPENAI " c Bearer " JWT;
	size_t n = strlen(text), cuts[512];
	char *whole;

	secret_register(PLAIN);
	secret_stream_init(&st);
	whole = masked(text);
	for (size_t i = 0; i + 1 < n; i++)
		cuts[i] = i + 1;
	stream_pieces(&st, text, cuts, n - 1, &sink);
	ck_assert_str_eq(sink.out, whole);
	for (size_t a = 0; a <= n; a += 3) {
		for (size_t b = a; b <= n; b += 5) {
			size_t two[2] = { a, b };

			stream_pieces(&st, text, two, 2, &sink);
			ck_assert_str_eq(sink.out, whole);
		}
	}
	free(whole);
	secret_stream_release(&st);
}
END_TEST

/* Texts built from key pieces, prefixes and words, cut at random places:
 * the stream always says what the whole text masked says. */
START_TEST(test_random_texts_cut_at_random_places_mask_as_the_whole_text_does)
{
	static const char *const parts[] = {
		" ", "s", "k", "-", "sk-", "sk-proj-", "AI", "AIza", "xai-", "gsk_", "Bearer ", "bearer",
		"  ", "abcdefghij", "0123456789", "KLMNOPQRST", "Zq8v", PLAIN, "abcdefgh12", "k-abcdefgh1",
		"é", "日本", ".", "=", "_", "\n", "abcdefgh12345678",
	};
	struct secret_stream st;
	struct sink sink;
	unsigned long seed = 12345;
	char text[400];

	secret_register(PLAIN);
	secret_register("abcdefgh12");
	secret_register("abcdefgh12345678");
	secret_register("k-abcdefgh1");
	secret_stream_init(&st);
	for (int round = 0; round < 3000; round++) {
		size_t n = 0, cuts[16], nc = 0;
		char *whole;

		for (int p = 0; p < 12; p++) {
			const char *part;

			seed = seed * 6364136223846793005UL + 1442695040888963407UL;
			part = parts[(seed >> 33) % (sizeof(parts) / sizeof(parts[0]))];
			memcpy(text + n, part, strlen(part));
			n += strlen(part);
		}
		text[n] = '\0';
		for (size_t c = 0; c < 6; c++) {
			seed = seed * 6364136223846793005UL + 1442695040888963407UL;
			cuts[nc] = (seed >> 33) % (n + 1);
			if (nc == 0 || cuts[nc] >= cuts[nc - 1])
				nc++;
		}
		whole = masked(text);
		stream_pieces(&st, text, cuts, nc, &sink);
		ck_assert_msg(strcmp(sink.out, whole) == 0, "text %s: stream %s, whole %s", text, sink.out,
			      whole);
		free(whole);
	}
	secret_stream_release(&st);
}
END_TEST

START_TEST(test_chunks_of_whole_characters_come_out_as_whole_characters)
{
	struct secret_stream st;
	struct sink sink;
	const char *text = "é" PLAIN "日本語 " OPENAI "🎉 ü";
	size_t n = strlen(text), cuts[256], nc = 0;

	secret_register(PLAIN);
	secret_stream_init(&st);
	for (size_t i = 1; i < n; i++)
		if (((unsigned char)text[i] & 0xC0) != 0x80)
			cuts[nc++] = i;
	stream_pieces(&st, text, cuts, nc, &sink);
	ck_assert(!sink.bad_utf8);
	ck_assert_str_eq(sink.out, "é***日本語 sk-***🎉 ü");
	secret_stream_release(&st);
}
END_TEST

START_TEST(test_an_ordinary_chunk_passes_at_once_in_one_piece)
{
	struct secret_stream st;
	struct sink sink = { .len = 0 };

	secret_register(PLAIN);
	secret_stream_init(&st);
	secret_stream_feed(&st, "hello world", 11, collect, &sink);
	ck_assert_uint_eq(sink.pieces, 1);
	ck_assert_str_eq(sink.out, "hello world");
	/* What may start a key waits for the next chunk, then goes with it. */
	secret_stream_feed(&st, " and Zq8", 8, collect, &sink);
	ck_assert_str_eq(sink.out, "hello world and ");
	ck_assert_uint_eq(st.held, 3);
	secret_stream_feed(&st, "x!", 2, collect, &sink);
	ck_assert_str_eq(sink.out, "hello world and Zq8x!");
	ck_assert_uint_eq(st.held, 0);
	secret_stream_end(&st, collect, &sink);
	ck_assert_uint_eq(sink.pieces, 3);
	secret_stream_release(&st);
}
END_TEST

START_TEST(test_a_shape_prefix_goes_out_at_once_and_its_token_is_masked_in_the_next_chunk)
{
	struct secret_stream st;
	struct sink sink = { .len = 0 };

	secret_stream_init(&st);
	secret_stream_feed(&st, "a b", 3, collect, &sink);
	ck_assert_str_eq(sink.out, "a b");
	secret_stream_feed(&st, "earer  ", 7, collect, &sink);
	ck_assert_str_eq(sink.out, "a bearer  ");
	ck_assert_uint_eq(st.held, 0);
	secret_stream_feed(&st, "abcdefgh", 8, collect, &sink);
	ck_assert_str_eq(sink.out, "a bearer  ");
	secret_stream_feed(&st, "ijklmnop qrs", 12, collect, &sink);
	secret_stream_end(&st, collect, &sink);
	ck_assert_str_eq(sink.out, "a bearer  *** qrs");
	secret_stream_release(&st);
}
END_TEST

START_TEST(test_a_long_shaped_token_goes_out_as_stars_before_it_ends)
{
	struct secret_stream st;
	struct sink sink = { .len = 0 };

	secret_stream_init(&st);
	secret_stream_feed(&st, "k: sk-proj-", 11, collect, &sink);
	ck_assert_str_eq(sink.out, "k: sk-");
	ck_assert_uint_eq(st.held, 5);
	secret_stream_feed(&st, "0123456789abcdefghij", 20, collect, &sink);
	ck_assert_str_eq(sink.out, "k: sk-***");
	ck_assert_uint_eq(st.held, 0);
	for (int i = 0; i < 100; i++)
		secret_stream_feed(&st, "AbCdEf0123", 10, collect, &sink);
	secret_stream_feed(&st, "XYZ. done", 9, collect, &sink);
	secret_stream_end(&st, collect, &sink);
	ck_assert_str_eq(sink.out, "k: sk-***. done");
	secret_stream_release(&st);
}
END_TEST

START_TEST(test_the_end_of_a_text_releases_what_was_held)
{
	struct secret_stream st;
	struct sink sink = { .len = 0 };

	secret_register(PLAIN);
	secret_stream_init(&st);
	secret_stream_feed(&st, "ends with sk-abc and Zq8vPlain", 30, collect, &sink);
	ck_assert_str_eq(sink.out, "ends with sk-abc and ");
	ck_assert_uint_eq(st.held, 9);
	secret_stream_end(&st, collect, &sink);
	ck_assert_str_eq(sink.out, "ends with sk-abc and Zq8vPlain");
	/* A new text starts at a word boundary. */
	secret_stream_feed(&st, "sk-0123456789abcdefghijk ok", 27, collect, &sink);
	secret_stream_end(&st, collect, &sink);
	ck_assert_str_eq(sink.out, "ends with sk-abc and Zq8vPlainsk-*** ok");
	secret_stream_release(&st);
}
END_TEST

START_TEST(test_secret_names_are_recognised_by_their_words)
{
	ck_assert(secret_name("OPENAI_API_KEY", 14));
	ck_assert(secret_name("x-api-key", 9));
	ck_assert(secret_name("GH_TOKEN", 8));
	ck_assert(secret_name("db_password", 11));
	ck_assert(!secret_name("HOME", 4));
	ck_assert(!secret_name("HTTP-Referer", 12));
}
END_TEST

START_TEST(test_passwd_credential_and_auth_names_are_secrets_but_author_sockets_and_paths_are_not)
{
	static const char *const secret[] = {
		"MYSQL_PASSWD", "GOOGLE_APPLICATION_CREDENTIALS", "aws_credential", "Authorization",
		"PROXY_AUTH", "auth", "X_AUTHORISATION", "AUTH_TOKEN", "HTTP_AUTH", "AUTH_HEADER",
		"x-auth", NULL,
	};
	static const char *const plain[] = {
		"WORK_DIR", "PROJECT_ROOT", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "PATH", "AUT",
		"SSH_AUTH_SOCK", "XAUTHORITY", "KRB5_AUTH_PATH", "AUTHORITY", "OAUTHLIB_DEBUG", NULL,
	};

	for (size_t i = 0; secret[i] != NULL; i++)
		ck_assert_msg(secret_name(secret[i], strlen(secret[i])), "%s", secret[i]);
	for (size_t i = 0; plain[i] != NULL; i++)
		ck_assert_msg(!secret_name(plain[i], strlen(plain[i])), "%s", plain[i]);
	/* Only n bytes are the name. */
	ck_assert(!secret_name("PATH_TOKEN", 4));
}
END_TEST

START_TEST(test_a_key_after_a_json_escape_in_serialized_text_is_masked)
{
	/* Serialized JSON: a newline, tab or CR before a key is backslash + letter. */
	assert_masked("{\"text\":\"my key:\\nsk-proj-0123456789abcdefghij\"}",
		      "{\"text\":\"my key:\\nsk-***\"}");
	assert_masked("a\\tsk-ant-0123456789abcdefghij b", "a\\tsk-*** b");
	assert_masked("a\\rAIza0123456789abcdefghijklmnopqrstu", "a\\rAIza***");
	assert_masked("q \\\"sk-0123456789abcdefghijklm\\\"", "q \\\"sk-***\\\"");
	assert_masked("x\\u000bsk-0123456789abcdefghijklm", "x\\u000bsk-***");
	assert_masked("\\nBearer abcdefghijklmnop0123", "\\nBearer ***");
	/* An escaped backslash then a letter is no escape of that letter. */
	assert_masked("a\\\\nsk-0123456789abcdefghijklm", "a\\\\nsk-0123456789abcdefghijklm");
	/* Still a token: a letter with no backslash before it. */
	assert_masked("nsk-0123456789abcdefghijklm", "nsk-0123456789abcdefghijklm");
}
END_TEST

/* A stream sees the escape before a key as the whole text does, however
 * the pieces fall: the escape in the piece before the key, split across
 * two, or after a run of backslashes longer than what the stream keeps. */
START_TEST(test_a_json_escape_before_a_key_is_a_boundary_in_a_stream_cut_anywhere)
{
	static const char *const texts[] = {
		"\\fBearer eyJhe.++bcd8+++7",
		"my key:\\nsk-proj-0123456789abcdefghij and q \\\"sk-0123456789abcdefghijklm\\\"",
		"x\\u000bsk-0123456789abcdefghijklm y\\u00e9Bearer abcdefghijklmnop0123",
		"a\\\\nsk-0123456789abcdefghijklm",
		"\\\\\\\\\\\\\\\\\\nsk-0123456789abcdefghijklm",
		"\\\\\\\\\\\\\\\\nsk-0123456789abcdefghijklm",
		"\\\\\\\\\\\\\\u0041sk-0123456789abcdefghijklm",
		"sk-0123456789abcdefghijklm\\nsk-0123456789abcdefghijklm",
	};
	static const bool is_masked[] = { true, true, true, false, true, false, true, true };
	struct secret_stream st;
	struct sink sink;

	secret_stream_init(&st);
	for (size_t t = 0; t < sizeof(texts) / sizeof(texts[0]); t++) {
		char *whole = masked(texts[t]);
		size_t n = strlen(texts[t]);

		/* Whole, the escapes decide (an even run of backslashes escapes
		 * none before the letter). */
		ck_assert_msg((strstr(whole, SECRET_MASK) != NULL) == is_masked[t], "text %zu: %s", t,
			      whole);
		for (size_t a = 0; a <= n; a++) {
			stream_pieces(&st, texts[t], &a, 1, &sink);
			ck_assert_msg(strcmp(sink.out, whole) == 0, "text %zu cut at %zu: %s vs %s", t,
				      a, sink.out, whole);
			for (size_t b = a; b <= n && b < a + 8; b++) {
				size_t two[2] = { a, b };

				stream_pieces(&st, texts[t], two, 2, &sink);
				ck_assert_msg(strcmp(sink.out, whole) == 0, "text %zu cut at %zu, %zu",
					      t, a, b);
			}
		}
		free(whole);
	}
	secret_stream_release(&st);
}
END_TEST

START_TEST(test_serialized_json_is_masked_in_values_but_not_in_keys_or_protocol_fields)
{
	char text[512];
	size_t len;

	ck_assert_int_eq(secret_register("assistant"), 0);
	ck_assert_int_eq(secret_register("client-7f3a9c"), 0);
	snprintf(text, sizeof(text), "%s",
		 "{\"type\":\"message_end\",\"id\":\"client-7f3a9c\",\"message\":{\"role\":"
		 "\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"the assistant said "
		 "client-7f3a9c\\nsk-0123456789abcdefghijklm\"}]},\"assistant\":1,\"client-7f3a9c\":2}");
	len = strlen(text);
	ck_assert(secret_mask_json_text(text, &len));
	text[len] = '\0';
	ck_assert_str_eq(text,
			 "{\"type\":\"message_end\",\"id\":\"client-7f3a9c\",\"message\":{\"role\":"
			 "\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"the *** said "
			 "***\\nsk-***\"}]},\"assistant\":1,\"client-7f3a9c\":2}");
	/* A string at the top and escaped quotes inside one. */
	snprintf(text, sizeof(text), "%s", "[\"a \\\"assistant\\\" b\",\"assistant\"]");
	len = strlen(text);
	secret_mask_json_text(text, &len);
	text[len] = '\0';
	ck_assert_str_eq(text, "[\"a \\\"***\\\" b\",\"***\"]");
}
END_TEST

Suite *secret_suite(void)
{
	Suite *s = suite_create("secret");
	TCase *tc = tcase_create("mask");
	TCase *cut = tcase_create("cut");
	TCase *st = tcase_create("stream");

	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_checked_fixture(cut, NULL, teardown);
	tcase_add_checked_fixture(st, NULL, teardown);
	tcase_add_test(tc, test_every_occurrence_of_a_registered_key_becomes_stars_and_the_text_shrinks);
	tcase_add_test(tc, test_a_key_after_a_json_escape_in_serialized_text_is_masked);
	tcase_add_test(tc, test_a_json_escape_before_a_key_is_a_boundary_in_a_stream_cut_anywhere);
	tcase_add_test(tc, test_serialized_json_is_masked_in_values_but_not_in_keys_or_protocol_fields);
	tcase_add_test(tc, test_text_with_a_nul_byte_is_masked_past_it);
	tcase_add_test(tc, test_no_occurrence_or_a_too_short_value_changes_nothing);
	tcase_add_test(tc, test_a_key_that_is_a_prefix_of_another_leaves_no_tail);
	tcase_add_test(tc, test_every_documented_key_shape_is_masked_whole_without_being_registered);
	tcase_add_test(tc, test_ordinary_words_and_retryd_ids_are_not_taken_for_keys);
	tcase_add_test(tc, test_json_strings_are_masked_in_place_and_keys_left_alone);
	tcase_add_test(tc, test_secret_names_are_recognised_by_their_words);
	tcase_add_test(tc, test_passwd_credential_and_auth_names_are_secrets_but_author_sockets_and_paths_are_not);
	tcase_add_test(tc, test_a_url_shows_no_user_part);
	tcase_add_test(cut, test_a_cut_inside_a_key_masks_it_whole_first);
	tcase_add_test(cut, test_a_cut_never_splits_a_character);
	tcase_add_test(st, test_a_key_split_across_two_chunks_at_any_offset_is_masked_whole);
	tcase_add_test(st, test_a_key_fed_byte_by_byte_or_in_three_chunks_is_masked_whole);
	tcase_add_test(st, test_random_texts_cut_at_random_places_mask_as_the_whole_text_does);
	tcase_add_test(st, test_chunks_of_whole_characters_come_out_as_whole_characters);
	tcase_add_test(st, test_an_ordinary_chunk_passes_at_once_in_one_piece);
	tcase_add_test(st, test_a_shape_prefix_goes_out_at_once_and_its_token_is_masked_in_the_next_chunk);
	tcase_add_test(st, test_a_long_shaped_token_goes_out_as_stars_before_it_ends);
	tcase_add_test(st, test_the_end_of_a_text_releases_what_was_held);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, cut);
	suite_add_tcase(s, st);
	return s;
}
