/*
 * Images: stopped, provisioned Lima instances in the daemon's Lima home
 * that lanes are cloned from (agent-lanectl image build, create --image).
 * Their instance names are "ali-" + 16 hex, never a lane name.
 *
 * This module keeps the rows and their holds (a clone or a build using an
 * image), answers image ls/show/rm, and at start-up deletes what a dead
 * daemon left half-built. Builds themselves are imagebuild.c's.
 */
#ifndef LANED_IMAGE_H
#define LANED_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "registry.h"
#include "wire.h"

struct laned;
struct conn;

#define IMAGE_SCRIPTS_N 64		/* provision scripts of an image */

void image_init(struct laned *);
/* Start-up: builds left "building" by a dead daemon are deleted. */
void image_recover(struct laned *);
/* Daemon exit: holds are dropped (builds first: image_build_free_all). */
void image_free_all(struct laned *);

/* Answers c with the image (cached: nothing was built) and finishes it. */
void image_send(struct laned *, struct conn *, const struct image_record *,
    bool cached);

/*
 * An image as users name it, as docker does: its name, else its id or a
 * prefix of the id (what image ls shows) among ready images. 0 with the
 * row in rec, or an ErrorCode with err filled: AMBIGUOUS for a prefix of
 * more than one image's id, NOT_FOUND, INVALID_ARGUMENT.
 */
int image_resolve(struct laned *, const char *ref, struct image_record *rec,
    char *err, size_t errlen);

void image_handle_list(struct laned *, struct conn *);
/* ref: a name, id or id prefix (image_resolve). */
void image_handle_get(struct laned *, struct conn *, const char *ref);
void image_handle_remove(struct laned *, struct conn *, const char *ref);

/*
 * A lane is about to be cloned from image `name`: checks it is ready and
 * not being removed, holds it (image rm refuses while held) and gives its
 * instance name and disk size. 0, or an ErrorCode with err filled.
 */
int image_hold(struct laned *, const char *name,
    char instance[IMAGE_INSTANCE_SIZE], uint32_t *disk_gib, char *err,
    size_t errlen);
void image_release(struct laned *, const char *name);
/*
 * A build replaced image `name`; retired is its old row, renamed and left
 * "building" (registry_image_replace). Its VM is deleted now, or when the
 * last clone holding the name is done; a daemon that stops first leaves
 * the row to the next start's recovery, which deletes it.
 */
void image_retire(struct laned *, const char *name,
    const struct image_record *retired);

#endif
