/*
 * Images: stopped, provisioned Lima instances in the daemon's Lima home
 * that lanes are cloned from (agent-lanectl image build, create --image).
 *
 * An image is made from the isolated lane template, registered before
 * limactl hears its instance name ("ali-" + 16 hex, never a lane name),
 * provisioned by running each script as root in the guest through
 * `limactl shell NAME -- sudo -n ...`, then stopped. Its content address
 * (image_content_id) is the SHA-256 of every input that shapes the disk;
 * building identical inputs under the same name answers with the existing
 * image. A build is one call with its own deadline: closing the connection
 * cancels it, and a failed or cancelled build deletes its VM and its row.
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

/* The inputs that make an image's disk, as content_id hashes them. */
struct image_inputs {
	const char *base_template;	/* the daemon's lane template base */
	const char *from_id;		/* "" or the parent image's id */
	bool docker;
	uint32_t cpus, memory_mib, disk_gib;
	const ProtobufCBinaryData *scripts;	/* bytes of each, in order */
	size_t nscripts;
};

/* Lowercase hex SHA-256 of the inputs (65 bytes with the NUL). */
void image_content_id(const struct image_inputs *, char out[IMAGE_ID_SIZE]);
/* 1-63 characters of [a-z0-9._-], starting with a letter or digit. */
bool image_name_valid(const char *);

void image_init(struct laned *);
/* Start-up: builds left "building" by a dead daemon are deleted. */
void image_recover(struct laned *);
/* Daemon exit: builds stop without cleanup (recovered at next start). */
void image_free_all(struct laned *);

void image_handle_build(struct laned *, struct conn *,
    const Agentlane__V1__BuildImage *);
void image_handle_list(struct laned *, struct conn *);
void image_handle_get(struct laned *, struct conn *, const char *name);
void image_handle_remove(struct laned *, struct conn *, const char *name);

/*
 * A lane is about to be cloned from image `name`: checks it is ready and
 * not being removed, holds it (image rm refuses while held) and gives its
 * instance name and disk size. 0, or an ErrorCode with err filled.
 */
int image_hold(struct laned *, const char *name,
    char instance[IMAGE_INSTANCE_SIZE], uint32_t *disk_gib, char *err,
    size_t errlen);
void image_release(struct laned *, const char *name);

#endif
