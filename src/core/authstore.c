#include "core/authstore.h"

#include <stdlib.h>
#include <string.h>

int authstore_init(struct authstore *self, const json_t *names)
{
	size_t i, n = 0;
	json_t *v;

	memset(self, 0, sizeof(*self));
	if (json_array_size(names) == 0)
		return 0;
	self->names = calloc(json_array_size(names), sizeof(*self->names));
	self->exhausted_until = calloc(json_array_size(names), sizeof(*self->exhausted_until));
	if (self->names == NULL || self->exhausted_until == NULL)
		goto fail;
	json_array_foreach(names, i, v) {
		if (!json_is_string(v))
			continue;
		self->names[n] = strdup(json_string_value(v));
		if (self->names[n] == NULL)
			goto fail;
		n++;
		self->count = n;
	}
	return 0;
fail:
	authstore_release(self);
	return -1;
}

void authstore_release(struct authstore *self)
{
	for (size_t i = 0; i < self->count; i++)
		free(self->names[i]);
	free(self->names);
	free(self->exhausted_until);
	memset(self, 0, sizeof(*self));
}

const char *authstore_current(const struct authstore *self)
{
	return self->count ? self->names[self->current] : NULL;
}

void authstore_mark_exhausted(struct authstore *self, int64_t until_ms)
{
	if (self->count)
		self->exhausted_until[self->current] = until_ms;
}

int authstore_next_available(const struct authstore *self, int64_t now_ms)
{
	for (size_t k = 1; k < self->count; k++) {
		size_t i = (self->current + k) % self->count;

		if (self->exhausted_until[i] <= now_ms)
			return (int)i;
	}
	return -1;
}

void authstore_use(struct authstore *self, size_t index)
{
	if (index < self->count)
		self->current = index;
}
