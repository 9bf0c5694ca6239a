#include "conn.h"
#include "copy.h"
#include "dispatch.h"
#include "exec.h"
#include "image.h"
#include "imagebuild.h"
#include "lanecommit.h"
#include "info.h"
#include "laned.h"
#include "lanecall.h"
#include "lanesecret.h"
#include "log.h"
#include "logcall.h"
#include "reaper.h"
#include "stats.h"

void
dispatch_request(struct laned *d, struct conn *c, const AlRequest *req)
{
	if (d->shutting_down) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
		    "agent-laned is shutting down");
		goto out;
	}
	switch (req->body_case) {
	case AGENTLANE__V1__REQUEST__BODY_CREATE_LANE:
		lanecall_handle_create(d, c, req->create_lane);
		break;
	case AGENTLANE__V1__REQUEST__BODY_GET_LANE:
		lanecall_handle_get(d, c, req->get_lane->name);
		break;
	case AGENTLANE__V1__REQUEST__BODY_LIST_LANES:
		lanecall_handle_list(d, c, req->list_lanes);
		break;
	case AGENTLANE__V1__REQUEST__BODY_DESTROY_LANE:
		lanecall_handle_destroy(d, c, req->destroy_lane->name);
		break;
	case AGENTLANE__V1__REQUEST__BODY_EXTEND_LANE:
		lanecall_handle_extend(d, c, req->extend_lane);
		break;
	case AGENTLANE__V1__REQUEST__BODY_GET_EVENTS:
		lanecall_handle_events(d, c, req->get_events);
		break;
	case AGENTLANE__V1__REQUEST__BODY_EXEC:
		exec_handle(d, c, req->exec);
		break;
	case AGENTLANE__V1__REQUEST__BODY_COPY_IN:
		copy_handle_in(d, c, req->copy_in);
		break;
	case AGENTLANE__V1__REQUEST__BODY_COPY_OUT:
		copy_handle_out(d, c, req->copy_out);
		break;
	case AGENTLANE__V1__REQUEST__BODY_REAP:
		reaper_handle_reap(d, c, req->reap);
		break;
	case AGENTLANE__V1__REQUEST__BODY_BUILD_IMAGE:
		image_handle_build(d, c, req->build_image);
		break;
	case AGENTLANE__V1__REQUEST__BODY_LIST_IMAGES:
		image_handle_list(d, c);
		break;
	case AGENTLANE__V1__REQUEST__BODY_GET_IMAGE:
		image_handle_get(d, c, req->get_image->name);
		break;
	case AGENTLANE__V1__REQUEST__BODY_REMOVE_IMAGE:
		image_handle_remove(d, c, req->remove_image->name);
		break;
	case AGENTLANE__V1__REQUEST__BODY_COMMIT_LANE:
		lanecommit_handle(d, c, req->commit_lane);
		break;
	case AGENTLANE__V1__REQUEST__BODY_GET_LOGS:
		logcall_handle(d, c, req->get_logs);
		break;
	case AGENTLANE__V1__REQUEST__BODY_GET_INFO:
		info_handle(d, c);
		break;
	case AGENTLANE__V1__REQUEST__BODY_GET_STATS:
		stats_handle(d, c, req->get_stats);
		break;
	default:
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "this frame cannot start a call");
		break;
	}
out:
	/* The caller frees the request next: not with the values in it. */
	if (req->body_case == AGENTLANE__V1__REQUEST__BODY_EXEC)
		exec_wipe_request((Agentlane__V1__Exec *)req->exec);
	if (req->body_case == AGENTLANE__V1__REQUEST__BODY_CREATE_LANE)
		lanesecret_wipe_request(
		    (Agentlane__V1__CreateLane *)req->create_lane);
}
