/* al_logs: the daemon's log or a lane's Lima logs, streamed. */
#include <string.h>

#include "internal.h"

static int
do_logs(struct al_client *c, const struct al_logs_opts *o,
    struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__GetLogs gl = AGENTLANE__V1__GET_LOGS__INIT;
	struct al_conn conn;
	AlResponse *resp;
	int rc = -1;

	if (o->chunk == NULL) {
		al_set_error(err, AL_INVALID_ARGUMENT, "al_logs needs a chunk "
		    "callback");
		return -1;
	}
	gl.lane = (char *)(o->lane != NULL ? o->lane : "");
	gl.follow = o->follow;
	gl.max_bytes = o->max_bytes;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_GET_LOGS;
	req.get_logs = &gl;
	if (al_conn_open(c, &conn, &req, err) == -1)
		return -1;
	for (;;) {
		const Agentlane__V1__LogChunk *ch;

		if ((resp = al_conn_recv(&conn, err)) == NULL)
			break;
		if (resp->body_case == AGENTLANE__V1__RESPONSE__BODY_ERROR) {
			al_error_from_response(err, resp);
			al_response_free(resp);
			break;
		}
		if (resp->body_case != AGENTLANE__V1__RESPONSE__BODY_LOG_CHUNK) {
			al_set_error(err, AL_PROTOCOL, "unexpected answer to "
			    "GetLogs");
			al_response_free(resp);
			break;
		}
		ch = resp->log_chunk;
		if (ch->eof) {
			al_response_free(resp);
			rc = 0;
			break;
		}
		if (ch->data.len > 0 && !o->chunk(ch->source != NULL ?
		    ch->source : "", ch->data.data, ch->data.len, o->arg)) {
			al_set_error(err, AL_IO, "writing the log failed");
			al_response_free(resp);
			break;
		}
		al_response_free(resp);
	}
	al_conn_close(&conn);
	return rc;
}

AL_API enum al_code
al_logs(struct al_client *c, const struct al_logs_opts *o,
    struct al_error *err)
{
	struct al_logs_opts opts;
	struct al_error local;

	err = al_error_begin(err, &local);
	if (al_opts_copy(&opts, sizeof opts, o, err) == -1)
		return al_result(-1, err);
	return al_result(do_logs(c, &opts, err), err);
}
