/* rpc — one protocol line in, the command run against the session, its
 * response out (through the same emitter as the events, so order holds). */
#ifndef RETRYD_RPC_H
#define RETRYD_RPC_H

#include <stddef.h>

#include "core/session.h"

struct rpc {
	struct session *session; /* borrowed */
	session_emit_fn emit;
	void *emit_ctx;
	size_t max_line;
};

void rpc_init(struct rpc *self, struct session *session, session_emit_fn emit, void *emit_ctx,
	      size_t max_line);
/* line: borrowed, `len` bytes, no LF. */
void rpc_handle_line(struct rpc *self, const char *line, size_t len);
/* A line passed rpc.maxLineBytes and was discarded; head (borrowed, `len`
 * bytes) is its start, read for an id to answer with. */
void rpc_handle_oversize(struct rpc *self, const char *head, size_t len);

#endif
