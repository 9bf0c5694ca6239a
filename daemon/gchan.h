/*
 * A lane's exec channel: one `limactl shell NAME -- perl -e HELPER mux`
 * kept open for the lane, carrying every exec started with gchan_exec, so
 * that an exec pays neither ssh, nor a login shell, nor compiling the
 * helper. Each exec has its own id, its own helper process in the guest
 * and its own output window: one exec never sees another's bytes, and one
 * that is not read stalls no other. A channel that dies (limactl exits,
 * its pipes fail, the guest breaks the protocol) fails the execs on it
 * with UNAVAILABLE, tells its watcher, and is replaced by the next exec.
 */
#ifndef LANED_GCHAN_H
#define LANED_GCHAN_H

#include <stddef.h>

struct event_base;
struct gchan;
struct gexec;
struct gexec_ops;
struct gexec_spec;
struct lima;
struct proc_list;

/* Output bytes of one exec in flight on a channel (its window). */
#define GCHAN_WINDOW (512u * 1024u)

/*
 * Like gexec_start, on the channel in *chan (opened first if there is
 * none; *chan is cleared when it dies or closes). Not for stdin_direct.
 */
struct gexec *gchan_exec(struct event_base *, struct proc_list *,
    struct lima *, struct gchan **chan, const struct gexec_spec *,
    const struct gexec_ops *, void *arg, char *err, size_t errlen);
/*
 * died(arg, why) is called once if the channel dies on its own while it is
 * still in its slot (never for gchan_close), before the execs on it fail:
 * the slot's owner may open another from there.
 */
typedef void (*gchan_died_cb)(void *arg, const char *why);
void gchan_watch(struct gchan *, gchan_died_cb, void *arg);
/* The lane stops: closes its channel; execs still on it fail. */
void gchan_close(struct gchan **chan);

#endif
