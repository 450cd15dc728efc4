#define PCRE2_CODE_UNIT_WIDTH 8

#include "provider/cli/cli_pattern.h"

#include <pcre2.h>
#include <string.h>

#include "base/errbuf.h"

int cli_pattern_compile(struct cli_pattern *p, const json_t *re, const char *where, char *err,
			size_t errlen)
{
	int code;
	PCRE2_SIZE off;

	if (!json_is_string(re) || json_string_length(re) == 0)
		return errbuf_set(err, errlen, "%s must be a regular expression", where);
	p->re = pcre2_compile((PCRE2_SPTR)json_string_value(re), json_string_length(re), PCRE2_UTF,
			      &code, &off, NULL);
	if (p->re == NULL) {
		PCRE2_UCHAR msg[160];

		pcre2_get_error_message(code, msg, sizeof(msg));
		return errbuf_set(err, errlen, "%s: %s at offset %zu", where, (const char *)msg,
				  (size_t)off);
	}
	p->md = pcre2_match_data_create_from_pattern(p->re, NULL);
	return p->md != NULL ? 0 : errbuf_set(err, errlen, "out of memory");
}

bool cli_pattern_matches(const struct cli_pattern *p, const char *text, size_t len)
{
	return pcre2_match(p->re, (PCRE2_SPTR)text, len, 0, 0, p->md, NULL) >= 0;
}

void cli_pattern_release(struct cli_pattern *p)
{
	pcre2_match_data_free(p->md);
	pcre2_code_free(p->re);
	p->md = p->re = NULL;
}
