/*
 * A program written against the installed libagentlane only (agentlane.h
 * and pkg-config): hello, create, exec with captured output, copy in and
 * out, list, destroy. Prints one TAP line per step.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <agentlane.h>

static int n, failed;

static void
check(int ok, const char *what, const struct al_error *err)
{
	printf("%sok %d - libagentlane: %s", ok ? "" : "not ", ++n, what);
	if (!ok && err != NULL)
		printf(" (%s: %s)", al_code_name(err->code), err->message);
	printf("\n");
	failed += !ok;
}

/* Set when, during a call, descriptor 0 or 2 (closed by us) was in use:
 * the library's socket would then be where our "stderr" writes go. */
static int stdio_taken;

static void
progress_cb(const char *phase, const char *message, void *arg)
{
	(void)phase;
	(void)message;
	(void)arg;
	if (fcntl(STDIN_FILENO, F_GETFD) != -1 ||
	    fcntl(STDERR_FILENO, F_GETFD) != -1)
		stdio_taken = 1;
}

int
main(int argc, char **argv)
{
	struct al_client *c = al_client_new(argv[1], "libclient-test");
	struct al_daemon_info info;
	struct al_lane lane, *lanes;
	struct al_exec_result res;
	struct al_error err;
	struct al_label label = { "suite", "libclient" };
	struct al_create_opts co = AL_CREATE_OPTS_INIT;
	const char *argv_echo[] = { "sh", "-c", "printf 'out'; printf err >&2; exit 5", NULL };
	char path[512], buf[64];
	int out[2], errp[2];
	size_t nlanes;
	uint64_t bytes;
	FILE *f;

	if (argc != 3 || c == NULL)
		return 2;
	co.timeout_s = 600;
	co.labels = &label;
	co.nlabels = 1;
	co.progress = progress_cb;
	check(al_hello(c, &info, &err) == AL_OK && info.protocol_version ==
	    AL_PROTOCOL_VERSION, "hello reports the protocol version", &err);
	/* A host program running with 0 and 2 closed. */
	close(STDIN_FILENO);
	close(STDERR_FILENO);
	check(al_create(c, &co, &lane, &err) == AL_OK && lane.state ==
	    AL_LANE_READY, "create returns a ready lane", &err);
	check(!stdio_taken, "with 0 and 2 closed, the socket stays above 2",
	    NULL);
	if (open("/dev/null", O_RDONLY) != STDIN_FILENO ||
	    open("/dev/null", O_WRONLY) != STDERR_FILENO)
		return 2;
	check(lane.nlabels == 1 && strcmp(lane.labels[0].value, "libclient") == 0,
	    "labels round-trip", NULL);

	if (pipe(out) == -1 || pipe(errp) == -1)
		return 2;
	struct al_exec_opts eo = AL_EXEC_OPTS_INIT;
	eo.argv = argv_echo;
	eo.stdout_fd = out[1];
	eo.stderr_fd = errp[1];
	check(al_exec(c, lane.name, &eo, &res, &err) == AL_OK && !res.signaled &&
	    res.code == 5, "exec returns the exit status", &err);
	close(out[1]);
	close(errp[1]);
	memset(buf, 0, sizeof buf);
	check(read(out[0], buf, sizeof buf - 1) == 3 && strcmp(buf, "out") == 0,
	    "exec stdout reaches the fd", NULL);
	memset(buf, 0, sizeof buf);
	check(read(errp[0], buf, sizeof buf - 1) == 3 && strcmp(buf, "err") == 0,
	    "exec stderr reaches the fd", NULL);

	snprintf(path, sizeof path, "%s/in.txt", argv[2]);
	if ((f = fopen(path, "w")) == NULL || fputs("payload\n", f) < 0 ||
	    fclose(f) != 0)
		return 2;
	check(al_copy_in(c, lane.name, path, "sub/in.txt", NULL, NULL, &bytes,
	    &err) == AL_OK && bytes > 0, "copy in", &err);
	snprintf(path, sizeof path, "%s/back.txt", argv[2]);
	check(al_copy_out(c, lane.name, "sub/in.txt", path, NULL, &bytes, NULL,
	    &err) == AL_OK && bytes == 8, "copy out", &err);
	check(al_list(c, false, &lanes, &nlanes, &err) == AL_OK && nlanes == 1 &&
	    strcmp(lanes[0].name, lane.name) == 0, "list", &err);
	al_lanes_free(lanes);
	check(al_destroy(c, lane.name, &lane, &err) == AL_OK &&
	    lane.state == AL_LANE_DESTROYED, "destroy", &err);
	check(al_get(c, "al-0000000000000000", &lane, &err) != AL_OK &&
	    err.code == AL_NOT_FOUND, "typed NOT_FOUND", NULL);
	al_client_free(c);
	return failed ? 1 : 0;
}
