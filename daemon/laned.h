/*
 * The daemon context. One struct laned is created in main() and passed
 * explicitly to every module; there are no other globals beyond the signal
 * events libevent owns.
 */
#ifndef LANED_H
#define LANED_H

#include <sys/queue.h>
#include <sys/types.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "proc.h"
#include "wire.h"

struct event_base;
struct event;
struct evdns_base;
struct registry;
struct lima;
struct proc;
struct conn;
struct lane;
struct pool;
struct images;
struct builds;
struct lanenet;
struct proxy;

TAILQ_HEAD(conn_list, conn);
TAILQ_HEAD(lane_list, lane);

struct laned {
	struct event_base *base;
	struct config cfg;
	struct registry *reg;
	struct lima *lima;
	uid_t uid;
	pid_t pid;		/* for HelloReply, without a call per hello */
	int64_t started_at_ms;	/* wall clock, for HelloReply */

	int listen_fd;
	bool listen_activated;	/* inherited from launchd/systemd */
	struct event *listen_ev;
	struct event *accept_pause;	/* EMFILE back-off */
	int lock_fd, socket_lock_fd;

	struct proc_list procs;
	struct conn_list conns;
	size_t nconns;
	uint64_t next_conn_id;

	struct lane_list lanes;	/* runtime state of live lanes */
	struct images *images;	/* image rows' holds (image.c) */
	struct builds *builds;	/* image builds (imagebuild.c) */
	struct commits *commits;	/* lane commits (lanecommit.c) */

	/*
	 * Hooks that keep the modules acyclic: conn.c hands a call to
	 * dispatch (dispatch_request) without knowing the handlers, and the
	 * lane state machine tells the reaper that expiries changed
	 * (reaper_rearm) without calling into it.
	 */
	void (*dispatch)(struct laned *, struct conn *, const AlRequest *);
	void (*lanes_changed)(struct laned *);
	/* The same news for the warm pool (pool_refill); NULL when off. */
	void (*pool_changed)(struct laned *);

	struct pool *pool;	/* warm pool; NULL when not configured */
	struct lanenet *net;	/* limactl facts (lanenet.c) */
	/* The lane proxies' resolver, made with the first (laneproxy.c). */
	struct evdns_base *proxy_dns;
	bool proxy_dns_tried;
	/*
	 * Called with every new lane proxy. NULL in agent-laned; the test
	 * build of the daemon (tests/proxy/testhooks.c) sets it to install
	 * a test resolver. No configuration reaches it.
	 */
	void (*proxy_hook)(struct proxy *);

	struct event *deadline_timer;
	struct event *tick_timer;
	struct event *sig_chld, *sig_term, *sig_int, *sig_hup;
	bool reconciled;	/* a reconcile has succeeded since start */
	bool reconciling;	/* a background reconcile is running */
	bool shutting_down;
};

#endif
