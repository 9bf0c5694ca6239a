/*
 * Supervised child processes (limactl) on the libevent loop: spawned with
 * posix_spawn in their own process group, never waited for with a blocking
 * call, reaped from SIGCHLD, killed as a group on timeout. Output is either
 * captured (stdout bounded by a cap, stderr as a bounded tail) or handed to
 * the owner as a non-blocking descriptor for streaming.
 */
#ifndef LANED_PROC_H
#define LANED_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

struct event_base;
struct proc;

/* The children of one owner (the daemon), for reaping and shutdown. */
TAILQ_HEAD(proc_list, proc);

enum proc_in { PROC_IN_NULL, PROC_IN_PIPE };
enum proc_out { PROC_OUT_NULL, PROC_OUT_CAPTURE, PROC_OUT_PIPE };

#define PROC_STDERR_TAIL 8192

struct proc_spec {
	char *const *argv;	/* argv[0] is an absolute path */
	char *const *envp;
	enum proc_in in;
	enum proc_out out;
	size_t out_cap;		/* PROC_OUT_CAPTURE: beyond this the child is killed */
	uint64_t timeout_ms;	/* 0: none */
	const char *what;	/* for logs: "limactl start al-..." */
	/*
	 * Optional: each complete line of stderr (without its newline, at
	 * most PROC_LINE_MAX bytes: longer lines are skipped), as it comes,
	 * with the done callback's arg. The tail is kept all the same.
	 */
	void (*err_line)(const char *line, size_t len, void *arg);
};

#define PROC_LINE_MAX 2048

/*
 * Called once, after the child has been reaped and its captured output
 * drained. status is as from waitpid(). The proc is freed after return.
 */
typedef void (*proc_done_cb)(struct proc *, int status, void *arg);

/* The child joins list; its pipes and timer run on base. */
struct proc *proc_spawn(struct event_base *, struct proc_list *,
    const struct proc_spec *, proc_done_cb, void *arg, char *err,
    size_t errlen);
/* SIGKILL to the child's whole process group. */
void proc_kill(struct proc *);
/* The owner is going away: no callback; the child is killed and reaped. */
void proc_abandon(struct proc *);

bool proc_timed_out(const struct proc *);
/* The child's pid, which is also its process group's id. */
pid_t proc_pid(const struct proc *);
bool proc_output_overflow(const struct proc *);
/* PROC_IN_PIPE / PROC_OUT_PIPE ends, non-blocking and close-on-exec. The
 * owner takes them over (and closes them); -1 if not requested. */
int proc_take_stdin(struct proc *);
int proc_take_stdout(struct proc *);
/* Captured stdout (NUL-terminated copy) and stderr tail; valid in the cb. */
const char *proc_stdout(const struct proc *, size_t *len);
const char *proc_stderr(const struct proc *);

/* SIGCHLD handler body: reaps every exited child. */
void proc_reap(struct proc_list *);
/*
 * Daemon exit: kills every child and reaps them (bounded wait), running
 * their callbacks so that owners can free themselves.
 */
void proc_shutdown(struct proc_list *);
size_t proc_count(const struct proc_list *);

/* "exit 3", "signal 9", for messages. */
void proc_status_string(int status, char *buf, size_t len);

#endif
