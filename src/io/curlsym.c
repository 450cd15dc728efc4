#include "io/curlsym.h"

#include <dlfcn.h>

#include "base/errbuf.h"

static struct curlsym table;
static int loaded; /* 0 not tried, 1 loaded, -1 failed */
static char failure[512];

/* POSIX's way to store dlsym()'s void * into a function pointer. */
#define LOAD(name)                                                                  \
	do {                                                                        \
		*(void **)(&out->name) = dlsym(lib, "curl_" #name);                 \
		if (out->name == NULL) {                                            \
			why = dlerror();                                            \
			return errbuf_set(err, errlen, "cannot load libcurl: %s",   \
					  why ? why : "no curl_" #name " in it");   \
		}                                                                   \
	} while (0)

int curlsym_open(struct curlsym *out, const char *const *names, char *err, size_t errlen)
{
	void *lib = NULL;
	const char *why = "no library name to try";

	for (size_t i = 0; names[i] != NULL && lib == NULL; i++) {
		lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (lib == NULL)
			why = dlerror();
	}
	if (lib == NULL)
		return errbuf_set(err, errlen, "cannot load libcurl: %s", why ? why : "not found");
	(void)dlerror(); /* a stale error would be taken for dlsym's */
	LOAD(global_init);
	LOAD(global_cleanup);
	LOAD(multi_init);
	LOAD(multi_cleanup);
	LOAD(multi_setopt);
	LOAD(multi_add_handle);
	LOAD(multi_remove_handle);
	LOAD(multi_socket_action);
	LOAD(multi_assign);
	LOAD(multi_info_read);
	LOAD(multi_strerror);
	LOAD(easy_init);
	LOAD(easy_cleanup);
	LOAD(easy_setopt);
	LOAD(easy_getinfo);
	LOAD(easy_pause);
	LOAD(easy_strerror);
	LOAD(slist_append);
	LOAD(slist_free_all);
	LOAD(url);
	LOAD(url_cleanup);
	LOAD(url_set);
	LOAD(url_get);
	LOAD(url_strerror);
	LOAD(free);
	/* The library stays loaded for the life of the process. */
	return 0;
}

const struct curlsym *curlsym_load(char *err, size_t errlen)
{
	static const char *const names[] = { "libcurl.so.4", "libcurl.so", NULL };

	if (loaded == 0)
		loaded = curlsym_open(&table, names, failure, sizeof(failure)) == 0 ? 1 : -1;
	if (loaded < 0) {
		errbuf_set(err, errlen, "%s", failure);
		return NULL;
	}
	return &table;
}
