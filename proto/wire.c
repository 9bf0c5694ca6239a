/*
 * Frame encoding and the name tables of the protocol enums. Everything that
 * touches a socket lives with its caller (daemon/conn.c with libevent,
 * client/client.c with blocking I/O); this file only turns messages into
 * bytes and back.
 */
/* macOS declares memset_s only on request. */
#define __STDC_WANT_LIB_EXT1__ 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "wire.h"

uint32_t
wire_header_length(const uint8_t hdr[WIRE_HEADER_SIZE])
{
	return ((uint32_t)hdr[0] << 24) | ((uint32_t)hdr[1] << 16) |
	    ((uint32_t)hdr[2] << 8) | (uint32_t)hdr[3];
}

void
wire_header_put(uint8_t hdr[WIRE_HEADER_SIZE], uint32_t len)
{
	hdr[0] = (uint8_t)(len >> 24);
	hdr[1] = (uint8_t)(len >> 16);
	hdr[2] = (uint8_t)(len >> 8);
	hdr[3] = (uint8_t)len;
}

static int
pack_message(const ProtobufCMessage *msg, uint8_t **out, size_t *outlen)
{
	size_t len = protobuf_c_message_get_packed_size(msg);
	uint8_t *buf;

	if (len > WIRE_MAX_FRAME)
		return -1;
	if ((buf = malloc(WIRE_HEADER_SIZE + len)) == NULL)
		return -1;
	wire_header_put(buf, (uint32_t)len);
	if (protobuf_c_message_pack(msg, buf + WIRE_HEADER_SIZE) != len) {
		free(buf);
		return -1;
	}
	*out = buf;
	*outlen = WIRE_HEADER_SIZE + len;
	return 0;
}

int
wire_pack_request(const AlRequest *req, uint8_t **out, size_t *outlen)
{
	return pack_message(&req->base, out, outlen);
}

int
wire_pack_response(const AlResponse *resp, uint8_t **out, size_t *outlen)
{
	return pack_message(&resp->base, out, outlen);
}

AlRequest *
wire_unpack_request(const uint8_t *buf, size_t len)
{
	return agentlane__v1__request__unpack(NULL, len, buf);
}

AlResponse *
wire_unpack_response(const uint8_t *buf, size_t len)
{
	return agentlane__v1__response__unpack(NULL, len, buf);
}

void
wire_wipe(void *p, size_t len)
{
	if (p == NULL || len == 0)
		return;
#if defined(__APPLE__)
	(void)memset_s(p, len, 0, len);
#else
	explicit_bzero(p, len);
#endif
}

void
wire_exit_string(char *buf, size_t len, bool signaled, int value)
{
	snprintf(buf, len, "%s %d", signaled ? "signal" : "exit", value);
}

void
wire_wait_string(char *buf, size_t len, int status)
{
	if (WIFEXITED(status))
		wire_exit_string(buf, len, false, WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		wire_exit_string(buf, len, true, WTERMSIG(status));
	else
		snprintf(buf, len, "status %#x", status);
}

/*
 * The names come from the protocol's own enum, so that a code added to
 * agentlane.proto has its name here without a second table to forget.
 */
const char *
wire_error_name(int code)
{
	const ProtobufCEnumValue *v;

	if (code == 0)
		return "UNSPECIFIED";
	v = protobuf_c_enum_descriptor_get_value(
	    &agentlane__v1__error_code__descriptor, code);
	return v != NULL ? v->name : "UNKNOWN";
}

static const char *const state_names[] = {
	"unspecified", "creating", "ready", "destroying", "destroyed", "failed",
	"pooled",
};

const char *
wire_lane_state_name(int state)
{
	if (state < 0 || (size_t)state >= sizeof state_names / sizeof *state_names)
		return "unknown";
	return state_names[state];
}

int
wire_lane_state_from_name(const char *name)
{
	for (size_t i = 1; i < sizeof state_names / sizeof *state_names; i++)
		if (strcmp(state_names[i], name) == 0)
			return (int)i;
	return 0;
}
