#include "client/frame.h"

#include <stdio.h>
#include <string.h>

static void frame_classify(json_t *obj, struct retryd_frame *f)
{
	json_t *v;

	memset(f, 0, sizeof(*f));
	f->kind = RETRYD_FRAME_INVALID;
	if (!json_is_object(obj))
		return;
	f->type = json_string_value(json_object_get(obj, "type"));
	if (f->type == NULL)
		return;
	if (strcmp(f->type, "ready") == 0) {
		f->kind = RETRYD_FRAME_READY;
		return;
	}
	if (strcmp(f->type, "response") != 0) {
		f->kind = RETRYD_FRAME_EVENT;
		return;
	}
	f->kind = RETRYD_FRAME_RESPONSE;
	f->id = json_string_value(json_object_get(obj, "id"));
	f->command = json_string_value(json_object_get(obj, "command"));
	f->success = json_is_true(json_object_get(obj, "success"));
	v = json_object_get(obj, "data");
	f->data = json_is_null(v) ? NULL : v;
	f->error = json_string_value(json_object_get(obj, "error"));
}

json_t *retryd_frame_parse(const char *line, size_t len, struct retryd_frame *f,
			   char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *obj = json_loadb(line, len, 0, &jerr);

	memset(f, 0, sizeof(*f));
	f->kind = RETRYD_FRAME_INVALID;
	if (obj == NULL) {
		snprintf(err, errlen, "not JSON: %s (at byte %d)", jerr.text, jerr.position);
		return NULL;
	}
	frame_classify(obj, f);
	if (f->kind == RETRYD_FRAME_INVALID) {
		snprintf(err, errlen, "%s", json_is_object(obj) ?
			 "a JSON object without a string \"type\"" : "not a JSON object");
		json_decref(obj);
		return NULL;
	}
	return obj;
}
