#include "provider.h"

const char *stop_reason_name(enum stop_reason reason)
{
	switch (reason) {
	case STOP_STOP: return "stop";
	case STOP_LENGTH: return "length";
	case STOP_TOOL_USE: return "toolUse";
	case STOP_ERROR: return "error";
	case STOP_ABORTED: return "aborted";
	}
	return "error";
}
