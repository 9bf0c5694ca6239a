/*
 * agent-lanectl wait LANE... [--timeout D]: until each lane is ready, so
 * that a shell can start several with `create --no-wait` and then wait
 * for them all; and the same wait for exec on a lane still creating.
 * The daemon has no "tell me when ready" call for another connection's
 * lane, so this asks for the lane's state, more slowly as time goes on
 * (50 ms doubling to 1 s): a boot takes seconds to minutes.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ctl.h"

static int64_t
now_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
ctl_wait_ready(struct ctl *ctl, const char *name, uint64_t timeout_ms,
    struct al_lane *lane, struct al_error *err)
{
	int64_t deadline = timeout_ms > 0 ? now_ms() + (int64_t)timeout_ms : 0;
	int64_t pause = 50;

	for (;;) {
		struct timespec ts;
		int64_t left;

		if (al_get(ctl->client, name, lane, err) != AL_OK)
			return CTL_WAIT_ERROR;
		if (lane->state == AL_LANE_READY)
			return CTL_WAIT_READY;
		if (lane->state != AL_LANE_CREATING) {
			err->code = AL_FAILED_PRECONDITION;
			err->os_errno = 0;
			snprintf(err->message, sizeof err->message,
			    "lane %s is %s, and will not be ready%s", lane->name,
			    al_state_name(lane->state), lane->error[0] != '\0' ?
			    ": " : "");
			if (lane->error[0] != '\0')
				snprintf(err->message + strlen(err->message),
				    sizeof err->message - strlen(err->message),
				    "%s", lane->error);
			return CTL_WAIT_ENDED;
		}
		left = deadline > 0 ? deadline - now_ms() : pause;
		if (left <= 0)
			return CTL_WAIT_TIMEOUT;
		if (left > pause)
			left = pause;
		ts.tv_sec = left / 1000;
		ts.tv_nsec = (long)(left % 1000) * 1000000;
		/* A signal ends the sleep; ctl_interrupted() says whether. */
		if (nanosleep(&ts, NULL) == -1 && errno == EINTR &&
		    ctl_interrupted()) {
			err->code = AL_CANCELLED;
			snprintf(err->message, sizeof err->message,
			    "interrupted");
			return CTL_WAIT_ERROR;
		}
		if (pause < 1000)
			pause *= 2;
	}
}

int
cmd_wait(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_parsed p;
	struct al_lane lane;
	struct al_error err;
	uint64_t timeout_ms = 0;
	int64_t deadline;
	int rc;

	if ((rc = ctl_parse(ctl, argc, argv, &p)) != CTL_CONTINUE)
		return rc;
	if (p.noperands == 0)
		return ctl_usage("usage: agent-lanectl wait [--timeout DURATION] "
		    "LANE... (see agent-lanectl help wait)");
	for (size_t i = 0; i < p.nopts; i++)
		if (ctl_is(&p.opts[i], "timeout") &&
		    (rc = ctl_opt_duration("--timeout", p.opts[i].value, 1,
		    &timeout_ms)) != 0)
			return rc;
	/* One deadline for them all, as timeout(1) would give. */
	deadline = timeout_ms > 0 ? now_ms() + (int64_t)timeout_ms : 0;
	for (size_t i = 0; i < p.noperands; i++) {
		int64_t left = deadline > 0 ? deadline - now_ms() : 0;

		if (deadline > 0 && left <= 0)
			left = 1;
		rc = ctl_wait_ready(ctl, p.operands[i], (uint64_t)left, &lane,
		    &err);
		if (rc == CTL_WAIT_TIMEOUT) {
			ctl_report(ctl, "DEADLINE_EXCEEDED", "wait",
			    p.operands[i], "still creating after --timeout",
			    NULL);
			return CTL_EXIT_TIMEOUT;
		}
		if (rc != CTL_WAIT_READY) {
			ctl_report(ctl, al_code_name(err.code), "wait",
			    p.operands[i], err.message, NULL);
			return ctl_exit_status(&err, CTL_EXIT_FAILURE);
		}
		printf("%s\n", lane.name);
	}
	return 0;
}
