/*
 * Image builds (agent-lanectl image build, create --provision).
 *
 * A BuildImage request is checked against the configured caps by a pure
 * function (image_build_check, unit-tested). The inputs that shape the
 * disk have a content address (image_content_id); a build whose inputs an
 * existing image already has answers with that image instead: under the
 * same name, or, for a build named by its content (create --provision),
 * under any name. Otherwise the image is registered before limactl hears
 * its instance name (vm.c), created from the isolated lane template (or
 * cloned from its parent), started, provisioned by running each script
 * as root in the guest through `limactl shell NAME -- sudo -n ...`, and
 * stopped. A build is one call with its own deadline: closing the
 * connection cancels it, and a failed or cancelled build deletes its VM
 * (once any limactl call in flight has finished) and its row.
 */
#ifndef LANED_IMAGEBUILD_H
#define LANED_IMAGEBUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "registry.h"
#include "wire.h"

struct config;
struct conn;
struct laned;

#define IMAGE_SCRIPT_NAME_MAX 255

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

/* What a checked request builds. */
struct image_build_plan {
	/*
	 * The row to register: name (given, or "p-" and the id's first 16
	 * digits), id, shape (defaults and the parent's disk applied), from,
	 * docker and the scripts' names.
	 */
	struct image_record rec;
	bool named;		/* the client gave the name */
};

/*
 * Checks a request against the caps of cfg. from is the parent image's row
 * when the request names one that exists (NULL otherwise: a named parent
 * then is NOT_FOUND). Returns 0 with plan filled, or the
 * agentlane.v1.ErrorCode with why in err. No I/O, no clock.
 */
int image_build_check(const struct config *, const Agentlane__V1__BuildImage *,
    const struct image_record *from, struct image_build_plan *, char *err,
    size_t errlen);

void image_build_init(struct laned *);
/* Daemon exit: builds stop without cleanup (recovered at next start). */
void image_build_free_all(struct laned *);

void image_handle_build(struct laned *, struct conn *,
    const Agentlane__V1__BuildImage *);

#endif
