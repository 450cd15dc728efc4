/* curlsym — libcurl, loaded at the first HTTP client rather than at start.
 *
 * Linked in, libcurl brings ~30 libraries (TLS, LDAP, SSH, IDN, ...) that the
 * dynamic loader maps and initialises at every start: about 9 ms and 6 MB of
 * RSS on a 2-core machine, most of retryd's start-up, for a daemon that may
 * never make a request (the sim provider). The http module calls libcurl
 * only through this table, filled by dlopen() when a client is created;
 * with an HTTP provider configured that still happens before `ready`.
 * The members have exactly the types libcurl's header declares. */
#ifndef RETRYD_CURLSYM_H
#define RETRYD_CURLSYM_H

#include <curl/curl.h>
#include <stddef.h>

#define CURLSYM(name) __typeof__(curl_##name) *name

struct curlsym {
	CURLSYM(global_init);
	CURLSYM(global_cleanup);
	CURLSYM(multi_init);
	CURLSYM(multi_cleanup);
	CURLSYM(multi_setopt);
	CURLSYM(multi_add_handle);
	CURLSYM(multi_remove_handle);
	CURLSYM(multi_socket_action);
	CURLSYM(multi_assign);
	CURLSYM(multi_info_read);
	CURLSYM(multi_strerror);
	CURLSYM(easy_init);
	CURLSYM(easy_cleanup);
	CURLSYM(easy_setopt);
	CURLSYM(easy_getinfo);
	CURLSYM(easy_pause);
	CURLSYM(easy_strerror);
	CURLSYM(slist_append);
	CURLSYM(slist_free_all);
	CURLSYM(url);
	CURLSYM(url_cleanup);
	CURLSYM(url_set);
	CURLSYM(url_get);
	CURLSYM(url_strerror);
	CURLSYM(free);
};

#undef CURLSYM

/* Loads libcurl once per process (later calls return the same table, or
 * the same failure; it stays loaded). Returns NULL with err (may be NULL)
 * saying why, in the loader's words ("cannot load libcurl: libcurl.so.4:
 * cannot open shared object file: No such file or directory"). */
const struct curlsym *curlsym_load(char *err, size_t errlen);

/* What curlsym_load does, without its once-per-process memory: dlopen()s
 * the first of names (NULL-terminated; borrowed) that loads and fills *out
 * from it. Returns 0, or -1 with err saying why ("cannot load libcurl:
 * <dlopen's or dlsym's error>"); *out is then partly filled and not to be
 * used. A library that loaded stays loaded. */
int curlsym_open(struct curlsym *out, const char *const *names, char *err, size_t errlen);

#endif
