/*
 * RPC load for bench/run.sh: CLIENTS threads, each making calls back to
 * back for SECONDS, one call per connection as the protocol has it
 * (connect, hello + GetLane in one write, read to end-of-stream, close).
 * Against the echo server (bench/echod.c) the same bytes travel and come
 * back, which is the floor of a call on this machine.
 *
 * Usage: rpcload daemon|echo SOCKET CLIENTS SECONDS LANE
 * Prints: calls/s p50-us p99-us failed-calls
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "wire.h"

#define LAT_MAX (1u << 21)	/* latencies kept per thread */

struct worker {
	pthread_t t;
	double *lat;		/* microseconds */
	size_t n;
	unsigned long failed;
};

static struct sockaddr_un sun;
static const uint8_t *req;
static size_t reqlen;
static int echo_mode;
static double until;

static double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* One call; 0 when it got what a successful call gets. */
static int
call(void)
{
	uint8_t buf[8192];
	size_t got = 0;
	ssize_t r;
	int fd, rc = -1;

	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1)
		return -1;
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) == -1 || connect(fd, (struct sockaddr *)&sun, sizeof sun) == -1 ||
	    write(fd, req, reqlen) != (ssize_t)reqlen)
		goto out;
	/* The echo: our bytes back. The daemon: frames to end-of-stream. */
	while ((echo_mode ? got < reqlen : 1) &&
	    (r = read(fd, buf + got, sizeof buf - got)) > 0)
		if ((got += (size_t)r) == sizeof buf)
			goto out;
	if (echo_mode)
		rc = got == reqlen ? 0 : -1;
	else {
		/* HelloReply, then the Lane (tag of field 3), nothing else. */
		size_t off = 0, frames = 0;
		uint8_t second = 0;

		while (off + 4 <= got) {
			uint32_t len = wire_header_length(buf + off);

			if (off + 4 + len > got)
				break;
			if (++frames == 2 && len > 0)
				second = buf[off + 4];
			off += 4 + len;
		}
		rc = off == got && frames == 2 && second == 0x1a ? 0 : -1;
	}
out:
	close(fd);
	return rc;
}

static void *
run(void *arg)
{
	struct worker *w = arg;
	double t0, t1;

	while ((t0 = now_us()) < until && w->n < LAT_MAX) {
		if (call() != 0)
			w->failed++;
		t1 = now_us();
		w->lat[w->n++] = t1 - t0;
	}
	return NULL;
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	AlRequest hello = AGENTLANE__V1__REQUEST__INIT;
	AlRequest get = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__Hello h = AGENTLANE__V1__HELLO__INIT;
	Agentlane__V1__GetLane g = AGENTLANE__V1__GET_LANE__INIT;
	uint8_t *a, *b, *both;
	size_t alen, blen, total = 0, k = 0;
	unsigned long failed = 0;
	struct worker *w;
	double *all, start, secs;
	int nw;

	if (argc != 6 || strlen(argv[2]) >= sizeof sun.sun_path ||
	    (nw = atoi(argv[3])) < 1 || nw > 1024 || atof(argv[4]) <= 0) {
		fprintf(stderr, "usage: rpcload daemon|echo SOCKET CLIENTS "
		    "SECONDS LANE\n");
		return 2;
	}
	echo_mode = strcmp(argv[1], "echo") == 0;
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, argv[2], strlen(argv[2]));
	h.protocol_version = WIRE_PROTOCOL_VERSION;
	h.client = "rpcload";
	hello.body_case = AGENTLANE__V1__REQUEST__BODY_HELLO;
	hello.hello = &h;
	g.name = argv[5];
	get.body_case = AGENTLANE__V1__REQUEST__BODY_GET_LANE;
	get.get_lane = &g;
	if (wire_pack_request(&hello, &a, &alen) == -1 ||
	    wire_pack_request(&get, &b, &blen) == -1 ||
	    (both = malloc(alen + blen)) == NULL) {
		fprintf(stderr, "rpcload: out of memory\n");
		return 1;
	}
	memcpy(both, a, alen);
	memcpy(both + alen, b, blen);
	req = both;
	reqlen = alen + blen;
	if ((w = calloc((size_t)nw, sizeof *w)) == NULL)
		return 1;
	start = now_us();
	until = start + atof(argv[4]) * 1e6;
	for (int i = 0; i < nw; i++) {
		if ((w[i].lat = malloc(LAT_MAX * sizeof *w[i].lat)) == NULL ||
		    pthread_create(&w[i].t, NULL, run, &w[i]) != 0) {
			fprintf(stderr, "rpcload: cannot start a client\n");
			return 1;
		}
	}
	for (int i = 0; i < nw; i++) {
		if (pthread_join(w[i].t, NULL) != 0)
			return 1;
		total += w[i].n;
		failed += w[i].failed;
	}
	secs = (now_us() - start) / 1e6;
	if (total == 0 || (all = malloc(total * sizeof *all)) == NULL)
		return 1;
	for (int i = 0; i < nw; i++) {
		memcpy(all + k, w[i].lat, w[i].n * sizeof *all);
		k += w[i].n;
	}
	qsort(all, total, sizeof *all, cmp);
	printf("%.0f %.0f %.0f %lu\n", total / secs, all[total / 2],
	    all[(size_t)(total * 0.99)], failed);
	return 0;
}
