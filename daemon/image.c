#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "conn.h"
#include "image.h"
#include "laned.h"
#include "lima.h"
#include "log.h"
#include "names.h"
#include "registry.h"
#include "util.h"
#include "vm.h"

/* An image clones or builds are using; image rm refuses while n > 0. */
struct hold {
	char name[IMAGE_NAME_SIZE];
	unsigned n;
	bool removing;
	/* An image this name had, replaced while held: deleted when n is 0. */
	bool has_retired;
	struct image_record retired;
	TAILQ_ENTRY(hold) entry;
};

static void retire_start(struct laned *, const struct image_record *);

struct images {
	TAILQ_HEAD(, hold) holds;
};

/* ---- Holds ---- */

static struct hold *
hold_find(struct laned *d, const char *name, bool create)
{
	struct hold *h;

	if (d->images == NULL)		/* daemon exit */
		return NULL;
	TAILQ_FOREACH(h, &d->images->holds, entry)
		if (strcmp(h->name, name) == 0)
			return h;
	if (!create)
		return NULL;
	h = xcalloc(1, sizeof *h);
	str_copy(h->name, name, sizeof h->name);
	TAILQ_INSERT_TAIL(&d->images->holds, h, entry);
	return h;
}

static void
hold_drop_if_idle(struct laned *d, struct hold *h)
{
	if (h->n == 0 && !h->removing) {
		if (h->has_retired)
			retire_start(d, &h->retired);
		TAILQ_REMOVE(&d->images->holds, h, entry);
		free(h);
	}
}

static unsigned
hold_count(struct laned *d, const char *name)
{
	struct hold *h = hold_find(d, name, false);

	return h != NULL ? h->n : 0;
}

/* Candidates an ambiguous id prefix lists at most. */
#define IMAGE_REF_CANDIDATES 4

/* Ready images whose id begins with prefix: the first in rec, n in all. */
static int
image_by_id_prefix(struct laned *d, const char *prefix,
    struct image_record *rec, char *names, size_t nameslen, size_t *n)
{
	struct image_record *all;
	size_t nall, len = strlen(prefix), off = 0;

	*n = 0;
	names[0] = '\0';
	if (registry_image_list(d->reg, &all, &nall) != REG_OK)
		return REG_ERROR;
	for (size_t i = 0; i < nall; i++) {
		if (all[i].state != IMAGE_READY ||
		    strncmp(all[i].id, prefix, len) != 0)
			continue;
		if (*n == 0)
			*rec = all[i];
		if (*n < IMAGE_REF_CANDIDATES && off < nameslen)
			off += (size_t)snprintf(names + off, nameslen - off,
			    "%s%s (%.12s)", *n > 0 ? ", " : "", all[i].name,
			    all[i].id);
		else if (*n == IMAGE_REF_CANDIDATES && off < nameslen)
			off += (size_t)snprintf(names + off, nameslen - off,
			    ", ...");
		(*n)++;
	}
	free(all);
	return REG_OK;
}

int
image_resolve(struct laned *d, const char *ref, struct image_record *rec,
    char *err, size_t errlen)
{
	char shown[IMAGE_NAME_SIZE + 8], names[IMAGE_REF_CANDIDATES *
	    (IMAGE_NAME_SIZE + 20) + 8];
	size_t n;
	int rc = REG_NOT_FOUND;

	str_copy(shown, ref != NULL ? ref : "", sizeof shown);
	str_sanitize(shown);
	if (ref == NULL || ref[0] == '\0' || (!names_image_valid(ref) &&
	    !names_image_id_prefix(ref))) {
		snprintf(err, errlen, "\"%s\" is not an image name, id or id "
		    "prefix", shown);
		return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
	}
	/* A name first, as docker does: "cafe" may be both. */
	if (names_image_valid(ref))
		rc = registry_image_get(d->reg, ref, rec);
	if (rc == REG_NOT_FOUND && names_image_id_prefix(ref)) {
		if ((rc = image_by_id_prefix(d, ref, rec, names, sizeof names,
		    &n)) == REG_OK && n > 1) {
			snprintf(err, errlen, "%s matches more than one image: "
			    "%s (give more of the id, or the name)", shown,
			    names);
			return AGENTLANE__V1__ERROR_CODE__AMBIGUOUS;
		}
		if (rc == REG_OK && n == 0)
			rc = REG_NOT_FOUND;
	}
	if (rc == REG_NOT_FOUND) {
		snprintf(err, errlen, "no image %s (agent-lanectl image ls)",
		    shown);
		return AGENTLANE__V1__ERROR_CODE__NOT_FOUND;
	}
	if (rc != REG_OK) {
		snprintf(err, errlen, "registry error: cannot read image %s",
		    shown);
		return AGENTLANE__V1__ERROR_CODE__INTERNAL;
	}
	return 0;
}

int
image_hold(struct laned *d, const char *name,
    char instance[IMAGE_INSTANCE_SIZE], uint32_t *disk_gib, char *err,
    size_t errlen)
{
	struct image_record rec;
	struct hold *h;
	int rc;

	if (!names_image_valid(name)) {
		snprintf(err, errlen, "invalid image name");
		return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
	}
	rc = registry_image_get(d->reg, name, &rec);
	if (rc == REG_NOT_FOUND) {
		snprintf(err, errlen, "no image %s (agent-lanectl image ls)",
		    name);
		return AGENTLANE__V1__ERROR_CODE__NOT_FOUND;
	}
	if (rc != REG_OK) {
		snprintf(err, errlen, "registry error: cannot read image %s",
		    name);
		return AGENTLANE__V1__ERROR_CODE__INTERNAL;
	}
	if (rec.state != IMAGE_READY ||
	    !names_image_instance_valid(rec.instance)) {
		snprintf(err, errlen, "image %s is still being built", name);
		return AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION;
	}
	h = hold_find(d, name, true);
	if (h == NULL || h->removing) {
		snprintf(err, errlen, "image %s is being removed", name);
		return AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION;
	}
	h->n++;
	str_copy(instance, rec.instance, IMAGE_INSTANCE_SIZE);
	if (disk_gib != NULL)
		*disk_gib = rec.disk_gib;
	return 0;
}

void
image_release(struct laned *d, const char *name)
{
	struct hold *h = hold_find(d, name, false);

	if (d->images == NULL)
		return;
	if (h == NULL || h->n == 0) {
		log_warnx("image %s: released more often than held", name);
		return;
	}
	h->n--;
	hold_drop_if_idle(d, h);
}

/* ---- Protobuf ---- */

static void
image_to_proto(struct laned *d, const struct image_record *rec,
    Agentlane__V1__Image *im, char **names, size_t maxnames, char *buf)
{
	size_t n = 0;
	char *p, *save = NULL;

	agentlane__v1__image__init(im);
	im->name = (char *)rec->name;
	im->id = (char *)rec->id;
	im->from = (char *)rec->from;
	im->docker = rec->docker;
	im->cpus = rec->cpus;
	im->memory_mib = rec->memory_mib;
	im->disk_gib = rec->disk_gib;
	im->created_at_ms = rec->created_at_ms;
	im->build_ms = rec->build_ms;
	im->in_use = hold_count(d, rec->name);
	im->committed_from = (char *)rec->committed_from;
	im->committed_alias = (char *)rec->committed_alias;
	im->committed_at_ms = rec->committed_at_ms;
	str_copy(buf, rec->scripts, IMAGE_SCRIPTS_MAX);
	for (p = strtok_r(buf, "\n", &save); p != NULL && n < maxnames;
	    p = strtok_r(NULL, "\n", &save))
		names[n++] = p;
	im->n_scripts = n;
	im->scripts = names;
}

void
image_send(struct laned *d, struct conn *c, const struct image_record *rec,
    bool cached)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__Image im;
	char *names[IMAGE_SCRIPTS_N], buf[IMAGE_SCRIPTS_MAX];

	image_to_proto(d, rec, &im, names, IMAGE_SCRIPTS_N, buf);
	im.cached = cached;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_IMAGE;
	resp.image = &im;
	(void)conn_send(c, &resp);
	conn_finish(c);
}

void
image_handle_list(struct laned *d, struct conn *c)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__ImageList il = AGENTLANE__V1__IMAGE_LIST__INIT;
	struct image_record *v = NULL;
	Agentlane__V1__Image *ims = NULL, **imv = NULL;
	char *(*names)[IMAGE_SCRIPTS_N] = NULL;
	char (*bufs)[IMAGE_SCRIPTS_MAX] = NULL;
	size_t n = 0, k = 0;

	if (registry_image_list(d->reg, &v, &n) != REG_OK) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error");
		return;
	}
	if (n > 0) {
		ims = xcalloc(n, sizeof *ims);
		imv = xcalloc(n, sizeof *imv);
		names = xcalloc(n, sizeof *names);
		bufs = xcalloc(n, sizeof *bufs);
	}
	/* Builds in progress are not images yet. max_images bounds n. */
	for (size_t i = 0; i < n; i++) {
		if (v[i].state != IMAGE_READY)
			continue;
		image_to_proto(d, &v[i], &ims[k], names[k], IMAGE_SCRIPTS_N,
		    bufs[k]);
		imv[k] = &ims[k];
		k++;
	}
	il.n_images = k;
	il.images = imv;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_IMAGE_LIST;
	resp.image_list = &il;
	(void)conn_send(c, &resp);
	conn_finish(c);
	free(bufs);
	free(names);
	free(imv);
	free(ims);
	free(v);
}

void
image_handle_get(struct laned *d, struct conn *c, const char *ref)
{
	struct image_record rec;
	char err[512];
	int code;

	if ((code = image_resolve(d, ref, &rec, err, sizeof err)) != 0) {
		conn_send_error(c, code, "%s", err);
		return;
	}
	if (rec.state != IMAGE_READY) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__NOT_FOUND,
		    "no image %s (it is being built)", rec.name);
		return;
	}
	image_send(d, c, &rec, false);
}

/* ---- Removal ---- */

struct removal {
	struct laned *d;
	struct conn *c;
	struct image_record rec;
	struct vm *vm;
};

static void
removal_closed(struct conn *c, void *ctx)
{
	struct removal *r = ctx;

	r->c = NULL;	/* the delete goes on; nobody to tell */
}

static const struct conn_handler removal_handler = {
	.closed = removal_closed,
};

/* The removal ended (the VM gone or not): the hold goes, then r. */
static void
removal_end(struct removal *r)
{
	struct hold *h = hold_find(r->d, r->rec.name, false);

	if (h != NULL) {
		h->removing = false;
		hold_drop_if_idle(r->d, h);
	}
	if (r->c != NULL)
		conn_set_handler(r->c, NULL, NULL);
	vm_free(r->vm);
	free(r);
}

static void
removal_gone(struct vm *vm, void *arg)
{
	struct removal *r = arg;
	struct laned *d = r->d;
	struct image_record cur;
	char row[IMAGE_NAME_SIZE];

	/*
	 * A build that replaced the image meanwhile took the name and left
	 * this one retired, as "~" + its instance: that row goes, not the
	 * new image's.
	 */
	str_copy(row, r->rec.name, sizeof row);
	if (registry_image_get(d->reg, r->rec.name, &cur) == REG_OK &&
	    strcmp(cur.instance, r->rec.instance) != 0)
		snprintf(row, sizeof row, "~%s", r->rec.instance);
	if (registry_image_delete(d->reg, row) == REG_ERROR)
		log_warnx("image %s: cannot delete the row", r->rec.name);
	(void)registry_event_append(d->reg, r->rec.instance, "image-removed",
	    r->rec.name);
	log_info("image %s: removed (%s)", r->rec.name, r->rec.instance);
	if (r->c != NULL) {
		conn_set_handler(r->c, NULL, NULL);
		image_send(d, r->c, &r->rec, false);
		r->c = NULL;
	}
	removal_end(r);
}

static void
removal_failed(struct vm *vm, const char *why, unsigned attempt,
    uint64_t retry_ms, void *arg)
{
	struct removal *r = arg;

	log_warnx("image %s: limactl delete failed: %s", r->rec.name, why);
	if (r->c != NULL) {
		conn_set_handler(r->c, NULL, NULL);
		conn_send_error(r->c, AGENTLANE__V1__ERROR_CODE__LIMA_FAILED,
		    "limactl delete failed: %s", why);
		r->c = NULL;
	}
	removal_end(r);
}

void
image_handle_remove(struct laned *d, struct conn *c, const char *ref)
{
	struct image_record rec;
	struct removal *r;
	struct hold *h;
	const char *name;
	char err[512];
	int code;

	if ((code = image_resolve(d, ref, &rec, err, sizeof err)) != 0) {
		conn_send_error(c, code, "%s", err);
		return;
	}
	name = rec.name;
	if (rec.state != IMAGE_READY) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    "image %s is being built; cancel the build instead", name);
		return;
	}
	h = hold_find(d, name, true);
	if (h->n > 0 || h->removing) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    h->removing ? "image %s is already being removed" :
		    "image %s is in use by %u clone(s) or build(s); try again "
		    "when they are done", name, h->n);
		return;
	}
	if (!names_image_instance_valid(rec.instance)) {
		hold_drop_if_idle(d, h);
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "image %s has an invalid instance name", name);
		return;
	}
	h->removing = true;
	r = xcalloc(1, sizeof *r);
	r->d = d;
	r->c = c;
	r->rec = rec;
	r->vm = vm_new(d, rec.instance, r);
	conn_set_handler(c, &removal_handler, r);
	vm_delete(r->vm, 1, removal_failed, removal_gone);
}

/* ---- Retirement: the VM of an image a build replaced ---- */

struct retirement {
	struct laned *d;
	struct image_record rec;	/* the retired row: "~" + instance */
	struct vm *vm;
};

static void
retire_gone(struct vm *vm, void *arg)
{
	struct retirement *t = arg;

	if (registry_image_delete(t->d->reg, t->rec.name) == REG_ERROR)
		log_warnx("images: cannot delete the row of replaced image %s",
		    t->rec.instance);
	(void)registry_event_append(t->d->reg, t->rec.instance,
	    "image-replaced", "deleted");
	log_info("images: %s, which a build replaced, is deleted",
	    t->rec.instance);
	vm_free(t->vm);
	free(t);
}

static void
retire_failed(struct vm *vm, const char *why, unsigned attempt,
    uint64_t retry_ms, void *arg)
{
	struct retirement *t = arg;

	log_warnx("images: cannot delete %s, which a build replaced (%s); "
	    "retried at the next start", t->rec.instance, why);
	vm_free(t->vm);
	free(t);
}

static void
retire_start(struct laned *d, const struct image_record *rec)
{
	struct retirement *t;

	if (d->shutting_down || !names_image_instance_valid(rec->instance))
		return;		/* the next start deletes the "building" row's VM */
	t = xcalloc(1, sizeof *t);
	t->d = d;
	t->rec = *rec;
	t->vm = vm_new(d, rec->instance, t);
	vm_delete(t->vm, 1, retire_failed, retire_gone);
}

void
image_retire(struct laned *d, const char *name,
    const struct image_record *retired)
{
	struct hold *h = hold_find(d, name, false);

	/* Being removed: the removal deletes that VM, and then its row. */
	if (h != NULL && h->removing)
		return;
	if (h == NULL || h->n == 0) {
		retire_start(d, retired);
		return;
	}
	/* Clones of it may be running: it goes when the last is done. */
	if (h->has_retired) {
		log_warnx("images: %s, replaced while in use, is deleted at the "
		    "next start", retired->instance);
		return;
	}
	h->has_retired = true;
	h->retired = *retired;
}

/* ---- Life cycle ---- */

void
image_init(struct laned *d)
{
	d->images = xcalloc(1, sizeof *d->images);
	TAILQ_INIT(&d->images->holds);
}

/* A build the last daemon did not finish, being deleted. */
struct recovery {
	struct laned *d;
	struct image_record rec;
	struct vm *vm;
};

static void
recovery_gone(struct vm *vm, void *arg)
{
	struct recovery *r = arg;

	if (registry_image_delete(r->d->reg, r->rec.name) == REG_ERROR)
		log_warnx("image %s: cannot delete the row", r->rec.name);
	else
		log_info("image %s: unfinished build %s deleted", r->rec.name,
		    r->rec.instance);
	vm_free(r->vm);
	free(r);
}

static void
recovery_failed(struct vm *vm, const char *why, unsigned attempt,
    uint64_t retry_ms, void *arg)
{
	struct recovery *r = arg;

	log_warnx("image %s: cannot delete unfinished build %s (%s); retried "
	    "at the next start", r->rec.name, r->rec.instance, why);
	vm_free(r->vm);
	free(r);
}

struct orphan_scan {
	struct image_record *v;
	size_t n;
};

/* An image-shaped instance no row names: reported, never deleted here. */
static void
orphan_cb(const char *name, void *arg)
{
	struct orphan_scan *o = arg;

	for (size_t i = 0; i < o->n; i++)
		if (strcmp(o->v[i].instance, name) == 0)
			return;
	log_warnx("images: instance %s has no image row (an orphan); remove "
	    "it with limactl delete if it is not yours", name);
}

void
image_recover(struct laned *d)
{
	struct image_record *v = NULL;
	struct orphan_scan o;
	struct recovery *r;
	size_t n = 0;

	if (registry_image_list(d->reg, &v, &n) != REG_OK) {
		log_warnx("images: cannot read the registry");
		return;
	}
	o.v = v;
	o.n = n;
	if (lima_scan_images(d->lima, orphan_cb, &o) == -1)
		log_warn("images: scanning %s", lima_home(d->lima));
	for (size_t i = 0; i < n; i++) {
		if (v[i].state == IMAGE_READY) {
			if (!lima_instance_exists(d->lima, v[i].instance))
				log_warnx("image %s: its instance %s is gone; "
				    "remove the image (agent-lanectl image rm)",
				    v[i].name, v[i].instance);
			continue;
		}
		/* A build the last daemon did not finish: undo it. */
		if (!names_image_instance_valid(v[i].instance))
			continue;
		r = xcalloc(1, sizeof *r);
		r->d = d;
		r->rec = v[i];
		r->vm = vm_new(d, v[i].instance, r);
		vm_delete(r->vm, 1, recovery_failed, recovery_gone);
	}
	free(v);
}

void
image_free_all(struct laned *d)
{
	struct hold *h;

	if (d->images == NULL)
		return;
	while ((h = TAILQ_FIRST(&d->images->holds)) != NULL) {
		TAILQ_REMOVE(&d->images->holds, h, entry);
		free(h);
	}
	free(d->images);
	d->images = NULL;
}
