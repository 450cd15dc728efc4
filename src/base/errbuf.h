/* errbuf — the sentence a checking function leaves in its caller's error
 * buffer ("sim.plan[2]: \"delayMs\" must be an integer >= 0").
 *
 * The convention across the modules that check input (settings, classify,
 * cli_profile, provider_http, provider_sim): a function takes `char *err,
 * size_t errlen`, and on failure writes what was wrong there and returns -1
 * (or NULL). Pure. */
#ifndef RETRYD_ERRBUF_H
#define RETRYD_ERRBUF_H

#include <stddef.h>

/* Formats the message into err[0..errlen) (cut to fit, NUL-terminated; err
 * NULL or errlen 0 writes nothing). Returns -1, for `return errbuf_set(...)`. */
int errbuf_set(char *err, size_t errlen, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 3, 4)))
#endif
	;

#endif
