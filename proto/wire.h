/*
 * Framing shared by agent-laned and libagentlane. See docs/protocol.md.
 *
 * A frame is a 4-byte big-endian length N followed by N bytes of one
 * protobuf message (agentlane.v1.Request from the client, Response from the
 * daemon). N is checked against the receiver's cap before any allocation.
 */
#ifndef AGENTLANE_WIRE_H
#define AGENTLANE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agentlane.pb-c.h"

/* WIRE_PROTOCOL_VERSION_TEST: only the test build of another release
 * (build/tests/agent-lanectl-proto2, tests/regress/remote.sh) sets it. */
#if defined(WIRE_PROTOCOL_VERSION_TEST)
#define WIRE_PROTOCOL_VERSION ((unsigned)(WIRE_PROTOCOL_VERSION_TEST))
#else
#define WIRE_PROTOCOL_VERSION 1u
#endif
#define WIRE_HEADER_SIZE 4u
/* Absolute protocol maximum; a daemon may be configured lower. */
#define WIRE_MAX_FRAME (1024u * 1024u)
/* Largest data payload a sender puts in one ExecOutput/ExecInput/DataChunk. */
#define WIRE_CHUNK (64u * 1024u)
/*
 * Bytes a Request or Response adds around a chunk's data (oneof tag and
 * length, the data field's tag and length, flags), with room to spare:
 * a sender under a smaller frame cap sends cap - this per frame. The
 * smallest configurable cap (4096) leaves 4032 bytes of data.
 */
#define WIRE_CHUNK_OVERHEAD 64u

typedef Agentlane__V1__Request AlRequest;
typedef Agentlane__V1__Response AlResponse;

enum wire_status {
	WIRE_OK = 0,
	WIRE_NEED_MORE,   /* not a whole frame yet */
	WIRE_TOO_LARGE,   /* declared length above the cap */
	WIRE_MALFORMED,   /* protobuf did not unpack */
};

/* Reads the declared payload length from a 4-byte header. */
uint32_t wire_header_length(const uint8_t hdr[WIRE_HEADER_SIZE]);
void wire_header_put(uint8_t hdr[WIRE_HEADER_SIZE], uint32_t len);

/*
 * Encodes a message as a whole frame into a newly allocated buffer.
 * Returns 0, or -1 when the message is above WIRE_MAX_FRAME or on ENOMEM.
 */
int wire_pack_request(const AlRequest *req, uint8_t **out, size_t *outlen);
int wire_pack_response(const AlResponse *resp, uint8_t **out, size_t *outlen);

/* Unpacks one payload (without header); NULL when malformed. */
AlRequest *wire_unpack_request(const uint8_t *buf, size_t len);
AlResponse *wire_unpack_response(const uint8_t *buf, size_t len);

/*
 * Zeroes memory that held a secret (an exec's environment, its input)
 * before it is freed: explicit_bzero (memset_s on macOS), which the
 * compiler may not drop as it may a memset before free.
 */
void wire_wipe(void *p, size_t len);

/*
 * The control socket when none is given: $AGENT_LANE_SOCKET, else this
 * path under the user's home directory. The daemon, libagentlane and the
 * TypeScript provider (client/sandcastle/src/client.ts) all use it; a node
 * test checks that the provider and agent-lanectl agree.
 */
#define WIRE_SOCKET_ENV "AGENT_LANE_SOCKET"
/*
 * The daemon elsewhere, as a URL (ssh://[USER@]HOST[:PORT], unix:///PATH):
 * ahead of $AGENT_LANE_SOCKET for libagentlane's al_client_open, the CLI
 * and the provider alike.
 */
#define WIRE_HOST_ENV "AGENT_LANE_HOST"
#define WIRE_DEFAULT_SOCKET_REL ".agent-lane/run/agent-laned.sock"

/*
 * How a process ended, as every log line and error message says it:
 * "exit 3" or "signal 9". wire_wait_string takes a wait(2) status.
 */
void wire_exit_string(char *buf, size_t len, bool signaled, int value);
void wire_wait_string(char *buf, size_t len, int status);

/* "INVALID_ARGUMENT", ... ; "UNKNOWN" for values outside the enum. */
const char *wire_error_name(int code);
/* "creating", "ready", ... as used in the registry, logs and the CLI. */
const char *wire_lane_state_name(int state);
/* Inverse of wire_lane_state_name; 0 (unspecified) when unknown. */
int wire_lane_state_from_name(const char *name);

#endif
