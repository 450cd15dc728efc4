#include "core/settings_key.h"

#include <stdlib.h>
#include <string.h>

bool settings_key_valid(const char *key)
{
	const char *p = key;

	if (*p == '\0')
		return false;
	for (;;) {
		const char *dot = strchr(p, '.');

		if (dot == p || (dot == NULL && *p == '\0'))
			return false;
		if (dot == NULL)
			return true;
		p = dot + 1;
	}
}

json_t *settings_key_get(const json_t *root, const char *key)
{
	char *dup, *name, *dot;
	json_t *node = (json_t *)root;

	if (!settings_key_valid(key))
		return NULL;
	dup = strdup(key);
	if (dup == NULL)
		return NULL;
	for (name = dup; node != NULL; name = dot + 1) {
		dot = strchr(name, '.');
		if (dot != NULL)
			*dot = '\0';
		node = json_is_object(node) ? json_object_get(node, name) : NULL;
		if (dot == NULL)
			break;
	}
	free(dup);
	return node;
}

int settings_key_set(json_t *root, const char *key, json_t *value)
{
	char *dup = strdup(key), *name, *dot;
	json_t *node = root, *child;

	if (dup == NULL)
		goto fail;
	for (name = dup; (dot = strchr(name, '.')) != NULL; name = dot + 1) {
		*dot = '\0';
		child = json_object_get(node, name);
		if (!json_is_object(child)) {
			child = json_object();
			if (json_object_set_new(node, name, child) < 0)
				goto fail;
		}
		node = child;
	}
	if (json_object_set_new(node, name, value) < 0) {
		value = NULL; /* already released by jansson */
		goto fail;
	}
	free(dup);
	return 0;
fail:
	json_decref(value);
	free(dup);
	return -1;
}

void settings_key_del(json_t *root, const char *key)
{
	char *dup = strdup(key), *name, *dot;
	json_t *node = root;

	if (dup == NULL)
		return;
	for (name = dup; (dot = strchr(name, '.')) != NULL; name = dot + 1) {
		*dot = '\0';
		node = json_object_get(node, name);
		if (!json_is_object(node))
			goto out;
	}
	json_object_del(node, name);
out:
	free(dup);
}
