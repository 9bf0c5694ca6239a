/*
 * libagentlane through ssh (tests/regress/remote.sh): al_client_open with
 * an ssh:// URL and a remote command, then the calls a program makes, and
 * what a lost or refused ssh says. One TAP line per check.
 *
 *   al-libremote URL REMOTE_COMMAND HOST_FILE BAD_PORT_URL
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentlane.h"

static int n, failed;

static void
check(int ok, const char *what, const struct al_error *err)
{
	printf("%sok %d - libagentlane over ssh: %s", ok ? "" : "not ", ++n,
	    what);
	if (!ok && err != NULL)
		printf(" (%s: %s)", al_code_name(err->code), err->message);
	printf("\n");
	failed += !ok;
}

static bool
on_sample(const struct al_lane_stats *const *v, size_t nv, int64_t t,
    void *arg)
{
	const char *lane = ((const char **)arg)[0];
	int *seen = (int *)((const char **)arg)[1];

	for (size_t i = 0; i < nv; i++)
		if (strcmp(v[i]->name, lane) == 0 && v[i]->error_code == 0 &&
		    v[i]->processes > 0 && v[i]->memory_limit_bytes > 0)
			*seen = 1;
	return false;
}

/* No child left unreaped: every ssh the library ran was waited for. */
static int
no_children(void)
{
	return waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD;
}

int
main(int argc, char **argv)
{
	struct al_client_opts o = AL_CLIENT_OPTS_INIT;
	struct al_exec_opts eo = AL_EXEC_OPTS_INIT;
	struct al_stats_opts so = AL_STATS_OPTS_INIT;
	struct al_info info = AL_INFO_INIT;
	struct al_daemon_info di;
	struct al_exec_result res;
	struct al_lane lane, fin;
	struct al_owner *owner = NULL;
	struct al_client *c, *bad;
	struct al_error err;
	const char *argv_cmd[] = { "sh", "-c", "cat; echo out; exit 3", NULL };
	const char *sarg[2];
	char path[256], buf[64];
	int pin[2], pout[2], seen = 0, fd;
	ssize_t got;

	if (argc != 5) {
		fprintf(stderr, "usage: al-libremote URL CMD FILE BADURL\n");
		return 2;
	}
	o.host = "ssh://-oProxyCommand=evil";
	c = al_client_open(&o, &err);
	check(c == NULL && err.code == AL_INVALID_ARGUMENT, "a host that "
	    "ssh would read as an option is refused", &err);
	o.host = argv[1];
	o.remote_command = "/bin/sh -c evil";
	c = al_client_open(&o, &err);
	check(c == NULL && err.code == AL_INVALID_ARGUMENT, "a remote command "
	    "the remote shell would split is refused", &err);
	o.remote_command = argv[2];
	o.name = "al-libremote";
	if ((c = al_client_open(&o, &err)) == NULL) {
		check(0, "al_client_open", &err);
		return 1;
	}
	check(strcmp(al_client_host(c), argv[1]) == 0, "al_client_host is "
	    "the URL", NULL);
	check(al_hello(c, &di, &err) == AL_OK && di.protocol_version == 1,
	    "hello", &err);
	check(al_info(c, &info, &err) == AL_OK &&
	    strstr(info.daemon.state_dir, "/home/") != NULL,
	    "info: the remote user's state directory", &err);

	if (al_create_owned(c, NULL, &lane, &owner, &err) != AL_OK) {
		check(0, "create (owned)", &err);
		return 1;
	}
	check(lane.owned, "create (owned)", &err);

	if (pipe(pin) == -1 || pipe(pout) == -1)
		return 1;
	(void)write(pin[1], "in\n", 3);
	close(pin[1]);
	eo.argv = argv_cmd;
	eo.stdin_fd = pin[0];
	eo.stdout_fd = pout[1];
	check(al_exec(c, lane.name, &eo, &res, &err) == AL_OK &&
	    !res.signaled && res.code == 3, "exec: stdin in, exit status 3 "
	    "back", &err);
	close(pout[1]);
	got = read(pout[0], buf, sizeof buf - 1);
	buf[got > 0 ? got : 0] = '\0';
	check(strcmp(buf, "in\nout\n") == 0, "exec: its output", NULL);
	close(pin[0]);
	close(pout[0]);

	check(al_copy_in(c, lane.name, argv[3], "f.bin", NULL, NULL, NULL,
	    &err) == AL_OK, "copy in", &err);
	snprintf(path, sizeof path, "%s.back", argv[3]);
	check(al_copy_out(c, lane.name, "f.bin", path, NULL, NULL, NULL,
	    &err) == AL_OK && (fd = open(path, O_RDONLY)) != -1 &&
	    close(fd) == 0, "copy out", &err);

	sarg[0] = lane.name;
	sarg[1] = (const char *)&seen;
	so.lanes = (const char *const *)&sarg[0];
	so.nlanes = 1;
	so.sample = on_sample;
	so.arg = sarg;
	check(al_stats(c, &so, &err) == AL_OK && seen, "stats", &err);

	/* Closing the owner is the ssh connection's end: the lane goes. */
	al_owner_close(owner);
	check(al_destroy(c, lane.name, &fin, &err) == AL_OK &&
	    fin.state == AL_LANE_DESTROYED, "the owner closed: the remote "
	    "lane is destroyed", &err);
	check(no_children(), "every ssh was reaped", NULL);

	o.host = argv[4];
	if ((bad = al_client_open(&o, &err)) == NULL)
		return 1;
	check(al_hello(bad, NULL, &err) == AL_UNAVAILABLE &&
	    strstr(err.message, "refused") != NULL, "ssh cannot connect: "
	    "UNAVAILABLE with ssh's words", &err);
	check(no_children(), "the failed ssh was reaped too", NULL);
	al_client_free(bad);
	al_client_free(c);
	return failed > 0;
}
