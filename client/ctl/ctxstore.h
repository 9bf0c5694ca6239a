/*
 * Contexts, as Docker's: named daemons to talk to (a host URL, a
 * description, the agent-lanectl to run there), one of them current. Each
 * is a file of its own, ~/.agent-lane/contexts/NAME, and the current one's
 * name is in ~/.agent-lane/current-context; both 0600 in 0700 directories
 * of ours, written whole or not at all (a temporary file, fsync, rename).
 *
 * The format is lines of text, read strictly (fuzzed: tests/fuzz/
 * fuzz_context.c): "# ..." comments, and KEY=VALUE with KEY one of host
 * (required), description and remote-command, each at most once; values
 * are printable UTF-8; every line ends with a newline; the file is at most
 * CTX_FILE_MAX bytes. A file or directory another user could have written
 * is refused, not read: it decides where commands and secrets go.
 *
 * This file calls nothing else of client/ctl (the fuzz target links it
 * alone); errors come back as text.
 */
#ifndef CTL_CTXSTORE_H
#define CTL_CTXSTORE_H

#include <stdbool.h>
#include <stddef.h>

#define CTX_FILE_MAX 4096
#define CTX_NAME_MAX 63
#define CTX_HOST_MAX 1099
#define CTX_DESC_MAX 256
#define CTX_REMOTE_MAX 255
/* The context that is no file: the local socket. */
#define CTX_DEFAULT "default"
#define CTX_LIST_MAX 256

struct ctx {
	char name[CTX_NAME_MAX + 1];
	char host[CTX_HOST_MAX + 1];
	char description[CTX_DESC_MAX + 1];
	char remote_command[CTX_REMOTE_MAX + 1];	/* "": agent-lanectl */
};

/* [A-Za-z0-9][A-Za-z0-9_.-]{0,62}, and not "default". */
bool ctx_name_valid(const char *);
/* A context file's bytes into c (name is the caller's): 0, or -1 and why. */
int ctx_parse(const char *buf, size_t len, struct ctx *c, char *err,
    size_t errlen);
/* The file's bytes for c; the length, or 0 if it does not fit. */
size_t ctx_format(const struct ctx *c, char *buf, size_t len);

/*
 * The store. 1: no such context (load), no current one (current); 0; -1
 * with why in err.
 */
int ctx_load(const char *name, struct ctx *c, char *err, size_t errlen);
/* Writes c; create: refused (1) if it exists. */
int ctx_save(const struct ctx *c, bool create, char *err, size_t errlen);
int ctx_remove(const char *name, char *err, size_t errlen);
/* Every context, sorted by name; *out is the caller's to free. */
int ctx_list(struct ctx **out, size_t *n, char *err, size_t errlen);
/* The current context's name, CTX_DEFAULT when none is set. */
int ctx_current(char name[CTX_NAME_MAX + 1], char *err, size_t errlen);
/* CTX_DEFAULT clears it. */
int ctx_set_current(const char *name, char *err, size_t errlen);
/* ~/.agent-lane/contexts, for messages. */
void ctx_dir(char *buf, size_t len);

#endif
