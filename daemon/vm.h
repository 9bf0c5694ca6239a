/*
 * One owner for a Lima instance's life, whoever the instance is for: a
 * lane (lane.c, lanecreate.c) or an image (image.c, imagebuild.c). It
 * names and registers instances, runs limactl create, clone, start, stop
 * and delete for them on the event loop, and keeps three rules that a
 * half-made VM needs:
 *
 *  - a create or clone is never killed half-way: limactl would leave a
 *    directory without lima.yaml, which `limactl delete` refuses ("it was
 *    NOT deleted, in case it is currently being cloned into"). An owner
 *    that wants the VM gone meanwhile (vm_interrupt) has it finish first;
 *  - a call that is killed all the same (its timeout, or an interrupted
 *    start or stop) is over only once its whole process group has gone,
 *    so a delete never races the killed call's children;
 *  - a directory limactl delete refuses for lack of lima.yaml is removed
 *    by the daemon itself, confined: no symbolic link followed, never
 *    across a mount point, only inside the daemon's own Lima home, and
 *    recorded as an event. This is safe because the registry row naming
 *    the instance was committed before limactl ever heard the name
 *    (register before create), and no call of ours runs on it then. (A
 *    limactl left running by a daemon killed with SIGKILL is nobody's to
 *    wait for: at worst it makes the directory again, and reconcile
 *    reports it as an orphan.)
 *
 * lima.c keeps limactl's command line and output formats; the owners keep
 * their state machines and registry rows.
 */
#ifndef LANED_VM_H
#define LANED_VM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct laned;
struct vm;

/* How one limactl call ended, for the owner's callback. */
struct vm_result {
	bool ok;
	/* Not ok: the agentlane.v1.ErrorCode to report (DEADLINE_EXCEEDED
	 * for a timeout, LIMA_FAILED, INTERNAL) and why, for people. */
	int code;
	char msg[320];
	bool timed_out;
	/* What limactl wrote to stderr (its last PROC_STDERR_TAIL bytes). */
	const char *stderr_tail;
};

typedef void (*vm_done_cb)(struct vm *, const struct vm_result *, void *arg);
/* Each line limactl writes to stderr, as it comes (progress). */
typedef void (*vm_line_cb)(const char *line, size_t len, void *arg);
/* A delete attempt failed; the next runs in retry_ms (0: no more). */
typedef void (*vm_failed_cb)(struct vm *, const char *why, unsigned attempt,
    uint64_t retry_ms, void *arg);
typedef void (*vm_gone_cb)(struct vm *, void *arg);

/*
 * Register before create: fills name (size > NAMES_IMAGE_INSTANCE_LEN) with a
 * fresh instance name ("al-" + 16 hex for a lane, "ali-" for an image)
 * that no directory of the Lima home has, and calls insert(arg) to commit
 * the row that names it, with a new name while insert returns REG_EXISTS
 * (8 tries). insert's result; VM_NO_NAME when the OS random source failed.
 */
#define VM_NO_NAME (-100)
int vm_register(struct laned *, bool image, char *name, size_t size,
    int (*insert)(void *arg), void *arg);

/* The instance `name` (validated by each argv builder); arg goes to the
 * callbacks. */
struct vm *vm_new(struct laned *, const char *name, void *arg);
/* The owner goes (daemon exit): a call in flight is left to be killed and
 * reaped without a callback; a pending retry is dropped. */
void vm_free(struct vm *);
const char *vm_name(const struct vm *);
/* A call (or the wait for a killed one's group) is in flight. */
bool vm_busy(const struct vm *);

/*
 * The calls. Each returns 0 and later runs done exactly once, or -1 when
 * limactl could not be run (logged; no callback). Timeouts come from the
 * configuration (start_timeout for start, command_timeout otherwise).
 *
 * create writes yaml as the instance's template (a private file of the
 * state directory, gone once create returns). clone copies the image
 * instance `from`, then replaces the copy's lima.yaml with yaml: the
 * image's own YAML is never trusted.
 */
int vm_create(struct vm *, const char *yaml, size_t len, vm_done_cb,
    vm_line_cb);
int vm_clone(struct vm *, const char *from, const char *yaml, size_t len,
    vm_done_cb);
int vm_start(struct vm *, vm_done_cb, vm_line_cb);
int vm_stop(struct vm *, vm_done_cb);

/*
 * The owner wants the VM gone while a call may run. A create or clone is
 * let finish; a start or stop is killed. Either way the call's callback
 * still runs (once the killed group has gone), and the owner deletes from
 * there. True if a callback is still to come.
 */
bool vm_interrupt(struct vm *);

/*
 * Deletes the instance (limactl delete --force), removing a half-made
 * directory limactl refuses (above). A failed attempt calls failed and,
 * unless max_attempts (0: no limit) were made, is retried after a back-off
 * doubling from 1 s to destroy_retry_max. gone runs once the directory is
 * gone. Both may free the owner (and with it the vm).
 */
void vm_delete(struct vm *, unsigned max_attempts, vm_failed_cb, vm_gone_cb);
/* A delete waiting for its retry runs now (an explicit request). */
void vm_delete_now(struct vm *);

/*
 * The confined removal of a half-made instance directory: `name` inside
 * the Lima home at home_fd, only while it has no lima.yaml, entries
 * unlinked without following symbolic links, never crossing to another
 * device (what is left stays). 0, or -1 with errno and why in err.
 * Exported for the unit test.
 */
int vm_remove_halfmade(int home_fd, const char *name, char *err,
    size_t errlen);

#endif
