#include "io/curlsym.h"

#include <dlfcn.h>
#include <stdio.h>

static struct curlsym table;
static int loaded; /* 0 not tried, 1 loaded, -1 failed */
static char failure[256];

/* POSIX's way to store dlsym()'s void * into a function pointer. */
#define LOAD(name)                                                              \
	do {                                                                    \
		*(void **)(&table.name) = dlsym(lib, "curl_" #name);            \
		if (table.name == NULL) {                                       \
			snprintf(failure, sizeof(failure),                      \
				 "cannot load libcurl: no curl_" #name " in it"); \
			return -1;                                              \
		}                                                               \
	} while (0)

static int load(void)
{
	static const char *const names[] = { "libcurl.so.4", "libcurl.so", NULL };
	void *lib = NULL;
	const char *why = "not found";

	for (size_t i = 0; names[i] != NULL && lib == NULL; i++) {
		lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (lib == NULL)
			why = dlerror();
	}
	if (lib == NULL) {
		snprintf(failure, sizeof(failure), "cannot load libcurl: %s", why ? why : "?");
		return -1;
	}
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
	if (loaded == 0)
		loaded = load() == 0 ? 1 : -1;
	if (loaded < 0) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "%s", failure);
		return NULL;
	}
	return &table;
}
