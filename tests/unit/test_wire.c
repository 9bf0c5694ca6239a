/*
 * proto/wire.c: frame headers, packing and unpacking of Request/Response,
 * and the enum name tables shared by the registry, logs and the CLI.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "agentlane.pb-c.h"
#include "wire.h"

static void
test_header_round_trip(void **state)
{
	static const uint32_t values[] = {
		0, 1, 0xff, 0x100, 0x12345678, WIRE_MAX_FRAME, 0x80000000u,
		0xffffffffu,
	};
	uint8_t hdr[WIRE_HEADER_SIZE];

	for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
		memset(hdr, 0xaa, sizeof hdr);
		wire_header_put(hdr, values[i]);
		assert_int_equal(wire_header_length(hdr), values[i]);
	}

	/* Big endian on the wire, whatever the host order. */
	wire_header_put(hdr, 0x01020304);
	assert_int_equal(hdr[0], 0x01);
	assert_int_equal(hdr[1], 0x02);
	assert_int_equal(hdr[2], 0x03);
	assert_int_equal(hdr[3], 0x04);
	hdr[0] = 0xff; hdr[1] = 0; hdr[2] = 0; hdr[3] = 0x01;
	assert_int_equal(wire_header_length(hdr), 0xff000001u);
}

/* Packs req, checks the header against the payload, unpacks the payload. */
static AlRequest *
request_round_trip(const AlRequest *req)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	AlRequest *back;

	assert_int_equal(wire_pack_request(req, &buf, &len), 0);
	assert_non_null(buf);
	assert_true(len >= WIRE_HEADER_SIZE);
	assert_int_equal(wire_header_length(buf), len - WIRE_HEADER_SIZE);
	assert_int_equal(len - WIRE_HEADER_SIZE,
	    protobuf_c_message_get_packed_size(&req->base));
	back = wire_unpack_request(buf + WIRE_HEADER_SIZE,
	    len - WIRE_HEADER_SIZE);
	free(buf);
	assert_non_null(back);
	return back;
}

static AlResponse *
response_round_trip(const AlResponse *resp)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	AlResponse *back;

	assert_int_equal(wire_pack_response(resp, &buf, &len), 0);
	assert_int_equal(wire_header_length(buf), len - WIRE_HEADER_SIZE);
	back = wire_unpack_response(buf + WIRE_HEADER_SIZE,
	    len - WIRE_HEADER_SIZE);
	free(buf);
	assert_non_null(back);
	return back;
}

static void
test_hello_round_trip(void **state)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT, *back;
	Agentlane__V1__Hello h = AGENTLANE__V1__HELLO__INIT;

	h.protocol_version = WIRE_PROTOCOL_VERSION;
	h.client = (char *)"test_wire/1";
	req.body_case = AGENTLANE__V1__REQUEST__BODY_HELLO;
	req.hello = &h;

	back = request_round_trip(&req);
	assert_int_equal(back->body_case, AGENTLANE__V1__REQUEST__BODY_HELLO);
	assert_int_equal(back->hello->protocol_version, WIRE_PROTOCOL_VERSION);
	assert_string_equal(back->hello->client, "test_wire/1");
	agentlane__v1__request__free_unpacked(back, NULL);
}

static void
test_exec_round_trip(void **state)
{
	/* argv and env values are bytes: NUL-free but not UTF-8. */
	static const uint8_t arg0[] = { 's', 'h' };
	static const uint8_t arg1[] = { 0xff, 0xfe, '\n', 0x80, '$' };
	static const uint8_t arg2[] = { 0 };	/* empty argument */
	static const uint8_t val[] = { 0xc3, 0x28, '=', '\t', 0x7f };
	AlRequest req = AGENTLANE__V1__REQUEST__INIT, *back;
	Agentlane__V1__Exec ex = AGENTLANE__V1__EXEC__INIT;
	Agentlane__V1__EnvVar ev[2] = {
		AGENTLANE__V1__ENV_VAR__INIT, AGENTLANE__V1__ENV_VAR__INIT,
	};
	Agentlane__V1__EnvVar *evp[2] = { &ev[0], &ev[1] };
	ProtobufCBinaryData argv[3] = {
		{ sizeof arg0, (uint8_t *)arg0 },
		{ sizeof arg1, (uint8_t *)arg1 },
		{ 0, (uint8_t *)arg2 },
	};

	ex.lane = (char *)"al-0123456789abcdef";
	ex.n_argv = 3;
	ex.argv = argv;
	ex.workdir = (char *)"/tmp/work dir";
	ev[0].name = (char *)"BINARY";
	ev[0].value.len = sizeof val;
	ev[0].value.data = (uint8_t *)val;
	ev[1].name = (char *)"EMPTY";
	ex.n_env = 2;
	ex.env = evp;
	ex.stdin = true;
	ex.timeout_ms = 0xfffffffffffull;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_EXEC;
	req.exec = &ex;

	back = request_round_trip(&req);
	assert_int_equal(back->body_case, AGENTLANE__V1__REQUEST__BODY_EXEC);
	assert_string_equal(back->exec->lane, "al-0123456789abcdef");
	assert_int_equal(back->exec->n_argv, 3);
	assert_int_equal(back->exec->argv[0].len, sizeof arg0);
	assert_memory_equal(back->exec->argv[0].data, arg0, sizeof arg0);
	assert_int_equal(back->exec->argv[1].len, sizeof arg1);
	assert_memory_equal(back->exec->argv[1].data, arg1, sizeof arg1);
	assert_int_equal(back->exec->argv[2].len, 0);
	assert_int_equal(back->exec->shell.len, 0);
	assert_string_equal(back->exec->workdir, "/tmp/work dir");
	assert_int_equal(back->exec->n_env, 2);
	assert_string_equal(back->exec->env[0]->name, "BINARY");
	assert_int_equal(back->exec->env[0]->value.len, sizeof val);
	assert_memory_equal(back->exec->env[0]->value.data, val, sizeof val);
	assert_string_equal(back->exec->env[1]->name, "EMPTY");
	assert_int_equal(back->exec->env[1]->value.len, 0);
	assert_true(back->exec->stdin);
	assert_int_equal(back->exec->timeout_ms, 0xfffffffffffull);
	agentlane__v1__request__free_unpacked(back, NULL);
}

static void
test_datachunk_round_trip(void **state)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT, *back;
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT, *rback;
	Agentlane__V1__DataChunk dc = AGENTLANE__V1__DATA_CHUNK__INIT;
	uint8_t *data = malloc(WIRE_CHUNK);

	assert_non_null(data);
	for (size_t i = 0; i < WIRE_CHUNK; i++)
		data[i] = (uint8_t)(i * 7 + (i >> 8));
	dc.data.len = WIRE_CHUNK;
	dc.data.data = data;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_DATA;
	req.data = &dc;

	back = request_round_trip(&req);
	assert_int_equal(back->body_case, AGENTLANE__V1__REQUEST__BODY_DATA);
	assert_int_equal(back->data->data.len, WIRE_CHUNK);
	assert_memory_equal(back->data->data.data, data, WIRE_CHUNK);
	assert_false(back->data->eof);
	agentlane__v1__request__free_unpacked(back, NULL);

	/* The same message travels daemon to client in a Response. */
	dc.data.len = 3;
	dc.eof = true;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_DATA;
	resp.data = &dc;
	rback = response_round_trip(&resp);
	assert_int_equal(rback->body_case, AGENTLANE__V1__RESPONSE__BODY_DATA);
	assert_int_equal(rback->data->data.len, 3);
	assert_memory_equal(rback->data->data.data, data, 3);
	assert_true(rback->data->eof);
	agentlane__v1__response__free_unpacked(rback, NULL);
	free(data);
}

static void
test_error_response_round_trip(void **state)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT, *back;
	Agentlane__V1__Error e = AGENTLANE__V1__ERROR__INIT;

	e.code = AGENTLANE__V1__ERROR_CODE__LIMA_FAILED;
	e.message = (char *)"limactl: boom";
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_ERROR;
	resp.error = &e;
	back = response_round_trip(&resp);
	assert_int_equal(back->body_case, AGENTLANE__V1__RESPONSE__BODY_ERROR);
	assert_int_equal(back->error->code,
	    AGENTLANE__V1__ERROR_CODE__LIMA_FAILED);
	assert_string_equal(back->error->message, "limactl: boom");
	agentlane__v1__response__free_unpacked(back, NULL);
}

/* A DataChunk request whose packed size is exactly WIRE_MAX_FRAME + extra. */
static int
pack_chunk_of_frame_size(size_t extra, uint8_t **out, size_t *outlen)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__DataChunk dc = AGENTLANE__V1__DATA_CHUNK__INIT;
	uint8_t *data = calloc(1, WIRE_MAX_FRAME + 1);
	size_t n = WIRE_MAX_FRAME;
	int rc;

	assert_non_null(data);
	req.body_case = AGENTLANE__V1__REQUEST__BODY_DATA;
	req.data = &dc;
	dc.data.data = data;
	/* Shrink the data until the encoded message fits exactly. */
	for (;;) {
		dc.data.len = n;
		if (protobuf_c_message_get_packed_size(&req.base) <=
		    WIRE_MAX_FRAME + extra)
			break;
		n--;
	}
	assert_int_equal(protobuf_c_message_get_packed_size(&req.base),
	    WIRE_MAX_FRAME + extra);
	rc = wire_pack_request(&req, out, outlen);
	free(data);
	return rc;
}

static void
test_pack_refuses_oversized(void **state)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__DataChunk dc = AGENTLANE__V1__DATA_CHUNK__INIT;
	uint8_t *data = calloc(1, WIRE_MAX_FRAME + 1), *buf = NULL;
	size_t len = 0;

	assert_non_null(data);
	dc.data.len = WIRE_MAX_FRAME + 1;
	dc.data.data = data;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_DATA;
	req.data = &dc;
	assert_int_equal(wire_pack_request(&req, &buf, &len), -1);
	assert_null(buf);
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_DATA;
	resp.data = &dc;
	assert_int_equal(wire_pack_response(&resp, &buf, &len), -1);
	assert_null(buf);
	free(data);

	/* The bound is on the payload: exactly the maximum still goes. */
	assert_int_equal(pack_chunk_of_frame_size(0, &buf, &len), 0);
	assert_int_equal(len, WIRE_HEADER_SIZE + WIRE_MAX_FRAME);
	assert_int_equal(wire_header_length(buf), WIRE_MAX_FRAME);
	free(buf);
	buf = NULL;
	assert_int_equal(pack_chunk_of_frame_size(1, &buf, &len), -1);
	assert_null(buf);
}

static void
test_unpack_garbage(void **state)
{
	static const uint8_t garbage[][6] = {
		{ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
		{ 0x0a, 0x7f, 0x01, 0x02, 0x03, 0x04 },	/* length past the end */
		{ 0x3a, 0x05, 0x12, 0x09, 0x00, 0x00 },	/* nested overrun */
		{ 0x07, 0x00, 0x00, 0x00, 0x00, 0x00 },	/* wire type 7 */
		{ 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 },	/* field number 0 */
	};
	AlRequest req = AGENTLANE__V1__REQUEST__INIT, *back;
	Agentlane__V1__Exec ex = AGENTLANE__V1__EXEC__INIT;
	ProtobufCBinaryData argv[1] = { { 5, (uint8_t *)"hello" } };
	uint8_t *buf;
	size_t len;

	for (size_t i = 0; i < sizeof garbage / sizeof *garbage; i++) {
		assert_null(wire_unpack_request(garbage[i], sizeof garbage[i]));
		assert_null(wire_unpack_response(garbage[i], sizeof garbage[i]));
	}

	/*
	 * A Request is one length-delimited field, so every strict prefix
	 * of a valid payload but the empty one is truncated mid-field.
	 */
	ex.lane = (char *)"al-0123456789abcdef";
	ex.n_argv = 1;
	ex.argv = argv;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_EXEC;
	req.exec = &ex;
	assert_int_equal(wire_pack_request(&req, &buf, &len), 0);
	for (size_t cut = 1; cut < len - WIRE_HEADER_SIZE; cut++)
		assert_null(wire_unpack_request(buf + WIRE_HEADER_SIZE, cut));
	free(buf);

	/*
	 * The empty payload is a valid Request with no body: the daemon
	 * must check body_case itself (conn.c does).
	 */
	back = wire_unpack_request((const uint8_t *)"", 0);
	assert_non_null(back);
	assert_int_equal(back->body_case, AGENTLANE__V1__REQUEST__BODY__NOT_SET);
	agentlane__v1__request__free_unpacked(back, NULL);
}

static void
test_error_names(void **state)
{
	assert_string_equal(wire_error_name(0), "UNSPECIFIED");
	assert_string_equal(wire_error_name(AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT),
	    "INVALID_ARGUMENT");
	assert_string_equal(wire_error_name(AGENTLANE__V1__ERROR_CODE__NOT_FOUND),
	    "NOT_FOUND");
	assert_string_equal(wire_error_name(AGENTLANE__V1__ERROR_CODE__TOO_LARGE),
	    "TOO_LARGE");
	assert_string_equal(wire_error_name(AGENTLANE__V1__ERROR_CODE__INTERNAL),
	    "INTERNAL");
	assert_string_equal(wire_error_name(AGENTLANE__V1__ERROR_CODE__LIMA_FAILED),
	    "LIMA_FAILED");
	assert_string_equal(wire_error_name(AGENTLANE__V1__ERROR_CODE__CANCELLED),
	    "CANCELLED");
	assert_string_equal(wire_error_name(13), "UNKNOWN");
	assert_string_equal(wire_error_name(-1), "UNKNOWN");
	assert_string_equal(wire_error_name(1000000), "UNKNOWN");

	/* Every code the protocol defines has its own name. */
	for (int i = 0; i <= AGENTLANE__V1__ERROR_CODE__CANCELLED; i++) {
		const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(
		    &agentlane__v1__error_code__descriptor, i);

		assert_non_null(v);
		if (i > 0)
			assert_string_equal(wire_error_name(i), v->name);
	}
	/* Codes numbered apart from the first ones too. */
	assert_string_equal(wire_error_name(AGENTLANE__V1__ERROR_CODE__AMBIGUOUS),
	    "AMBIGUOUS");
	assert_string_equal(wire_error_name(
	    AGENTLANE__V1__ERROR_CODE__ALREADY_EXISTS), "ALREADY_EXISTS");
	assert_string_equal(wire_error_name(29), "UNKNOWN");
}

static void
test_state_names(void **state)
{
	static const struct {
		int state;
		const char *name;
	} t[] = {
		{ AGENTLANE__V1__LANE_STATE__CREATING, "creating" },
		{ AGENTLANE__V1__LANE_STATE__READY, "ready" },
		{ AGENTLANE__V1__LANE_STATE__DESTROYING, "destroying" },
		{ AGENTLANE__V1__LANE_STATE__DESTROYED, "destroyed" },
		{ AGENTLANE__V1__LANE_STATE__FAILED, "failed" },
		{ AGENTLANE__V1__LANE_STATE__POOLED, "pooled" },
	};

	for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
		assert_string_equal(wire_lane_state_name(t[i].state), t[i].name);
		assert_int_equal(wire_lane_state_from_name(t[i].name),
		    t[i].state);
	}
	assert_string_equal(wire_lane_state_name(0), "unspecified");
	assert_string_equal(wire_lane_state_name(7), "unknown");
	assert_string_equal(wire_lane_state_name(-1), "unknown");

	/* Unknown names map to 0, including "unspecified" itself. */
	assert_int_equal(wire_lane_state_from_name("unspecified"), 0);
	assert_int_equal(wire_lane_state_from_name(""), 0);
	assert_int_equal(wire_lane_state_from_name("READY"), 0);
	assert_int_equal(wire_lane_state_from_name("ready "), 0);
	assert_int_equal(wire_lane_state_from_name("unknown"), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_round_trip),
		cmocka_unit_test(test_hello_round_trip),
		cmocka_unit_test(test_exec_round_trip),
		cmocka_unit_test(test_datachunk_round_trip),
		cmocka_unit_test(test_error_response_round_trip),
		cmocka_unit_test(test_pack_refuses_oversized),
		cmocka_unit_test(test_unpack_garbage),
		cmocka_unit_test(test_error_names),
		cmocka_unit_test(test_state_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
