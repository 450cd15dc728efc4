/* retryd — protocol constants shared by the daemon and its clients. */
#ifndef RETRYD_PROTOCOL_H
#define RETRYD_PROTOCOL_H

#define RETRYD_VERSION "0.1.0"
/* The session file format version (first line's "version"). */
#define RETRYD_SESSION_VERSION 1

/* Every frame is one JSON object on one line, LF-terminated. */
#define RETRYD_FRAME_READY "{\"type\":\"ready\"}"

#endif
