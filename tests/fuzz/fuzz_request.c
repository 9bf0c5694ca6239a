/*
 * The daemon's request decoding path: frames split as daemon/conn.c does
 * (4-byte big-endian length, capped at the protocol maximum) and each
 * payload unpacked with wire_unpack_request. Whatever decodes must also
 * survive a re-pack: pack(unpack(x)) unpacks again and re-packs to the
 * same bytes.
 *
 * Except with unknown fields: protobuf-c 1.4.1 accepts field number 0 when
 * its tag is overlong ("80 00"), keeps it as an unknown field and re-emits
 * it as "00", which it then refuses. The daemon never re-packs what it
 * received, so messages with unknown fields are only decoded and freed.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* Whether any message in the tree kept unknown fields. */
static bool
has_unknown(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;

	if (m->n_unknown_fields > 0)
		return true;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *base = (const char *)m;

		if (f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + f->quantifier_offset);
			ProtobufCMessage *const *v =
			    *(ProtobufCMessage *const *const *)(base + f->offset);

			for (size_t j = 0; j < n; j++)
				if (has_unknown(v[j]))
					return true;
			continue;
		}
		/* A oneof member is set only when its case says so. */
		if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
		    *(const uint32_t *)(base + f->quantifier_offset) != f->id)
			continue;
		{
			const ProtobufCMessage *sub =
			    *(const ProtobufCMessage *const *)(base + f->offset);

			if (sub != NULL && has_unknown(sub))
				return true;
		}
	}
	return false;
}

static void
check_repack(const AlRequest *req)
{
	uint8_t *buf, *buf2;
	size_t len, len2;
	AlRequest *again;

	if (has_unknown(&req->base))
		return;
	/* Re-encoding can grow a message; then it is simply not sendable. */
	if (wire_pack_request(req, &buf, &len) == -1)
		return;
	if (wire_header_length(buf) != len - WIRE_HEADER_SIZE)
		abort();
	if ((again = wire_unpack_request(buf + WIRE_HEADER_SIZE,
	    len - WIRE_HEADER_SIZE)) == NULL)
		abort();
	if (again->body_case != req->body_case)
		abort();
	/* Canonical after one round: the second encoding is identical. */
	if (wire_pack_request(again, &buf2, &len2) == -1)
		abort();
	if (len2 != len || memcmp(buf, buf2, len) != 0)
		abort();
	free(buf2);
	agentlane__v1__request__free_unpacked(again, NULL);
	free(buf);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;

	while (size - off >= WIRE_HEADER_SIZE) {
		uint32_t len = wire_header_length(data + off);
		AlRequest *req;

		/* conn.c checks the length before reading the payload. */
		if (len > WIRE_MAX_FRAME)
			break;
		if (size - off - WIRE_HEADER_SIZE < len)
			break;	/* a truncated frame waits for more input */
		off += WIRE_HEADER_SIZE;
		req = wire_unpack_request(data + off, len);
		off += len;
		if (req == NULL)
			break;	/* malformed: the connection is closed */
		check_repack(req);
		agentlane__v1__request__free_unpacked(req, NULL);
	}
	return 0;
}
