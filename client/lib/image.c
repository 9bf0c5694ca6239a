/* Image calls: build (streaming progress and script output), list, get, rm,
 * and commit (a lane's disk made an image). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void
image_from_proto(struct al_image *out, const Agentlane__V1__Image *im)
{
	memset(out, 0, sizeof *out);
	snprintf(out->name, sizeof out->name, "%s", im->name ? im->name : "");
	snprintf(out->id, sizeof out->id, "%s", im->id ? im->id : "");
	snprintf(out->from, sizeof out->from, "%s", im->from ? im->from : "");
	out->docker = im->docker;
	out->cpus = im->cpus;
	out->memory_mib = im->memory_mib;
	out->disk_gib = im->disk_gib;
	out->created_at_ms = im->created_at_ms;
	out->build_ms = im->build_ms;
	out->cached = im->cached;
	out->in_use = im->in_use;
	snprintf(out->committed_from, sizeof out->committed_from, "%s",
	    im->committed_from ? im->committed_from : "");
	snprintf(out->committed_alias, sizeof out->committed_alias, "%s",
	    im->committed_alias ? im->committed_alias : "");
	out->committed_at_ms = im->committed_at_ms;
	for (size_t i = 0; i < im->n_scripts && i < AL_IMAGE_SCRIPTS_MAX; i++)
		snprintf(out->scripts[out->nscripts++], sizeof out->scripts[0],
		    "%s", im->scripts[i] ? im->scripts[i] : "");
}

/* Sends req; returns the first answer that is neither progress nor output. */
static AlResponse *
image_call(struct al_client *c, const AlRequest *req,
    const struct al_image_build_opts *o, struct al_error *err)
{
	struct al_conn conn;
	AlResponse *resp;

	if (al_conn_open(c, &conn, req, err) == -1)
		return NULL;
	for (;;) {
		if ((resp = al_conn_recv(&conn, err)) == NULL)
			break;
		if (resp->body_case == AGENTLANE__V1__RESPONSE__BODY_PROGRESS) {
			if (o != NULL && o->progress != NULL)
				o->progress(resp->progress->phase != NULL ?
				    resp->progress->phase : "",
				    resp->progress->message != NULL ?
				    resp->progress->message : "", o->arg);
		} else if (resp->body_case ==
		    AGENTLANE__V1__RESPONSE__BODY_EXEC_OUTPUT) {
			int fd = o == NULL ? -1 : resp->exec_output->stream ==
			    AGENTLANE__V1__STREAM__STDERR ? o->stderr_fd :
			    o->stdout_fd;

			/* A closed output must not end the build. */
			if (fd >= 0 && resp->exec_output->data.len > 0)
				(void)al_write_all(fd,
				    resp->exec_output->data.data,
				    resp->exec_output->data.len);
		} else
			break;
		al_response_free(resp);
	}
	/* Closing the connection is what cancels a build. */
	al_conn_close(&conn);
	return resp;
}

static int
image_answer(AlResponse *resp, struct al_image *out, struct al_error *err)
{
	if (resp == NULL)
		return -1;
	if (resp->body_case != AGENTLANE__V1__RESPONSE__BODY_IMAGE) {
		al_error_from_response(err, resp);
		al_response_free(resp);
		return -1;
	}
	if (out != NULL)
		image_from_proto(out, resp->image);
	al_response_free(resp);
	return 0;
}

static int
do_image_build(struct al_client *c, const struct al_image_build_opts *o,
    struct al_image *out, struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__BuildImage bi = AGENTLANE__V1__BUILD_IMAGE__INIT;
	Agentlane__V1__ProvisionScript *sv = NULL, **spv = NULL;
	int rc;

	if (o == NULL || o->nscripts > AL_IMAGE_SCRIPTS_MAX) {
		al_set_error(err, AL_INVALID_ARGUMENT, "at most %d provision "
		    "scripts", AL_IMAGE_SCRIPTS_MAX);
		return -1;
	}
	if (o->nscripts > 0 && ((sv = calloc(o->nscripts, sizeof *sv)) == NULL ||
	    (spv = calloc(o->nscripts, sizeof *spv)) == NULL)) {
		free(sv);
		al_set_error(err, AL_IO, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < o->nscripts; i++) {
		agentlane__v1__provision_script__init(&sv[i]);
		sv[i].name = (char *)o->scripts[i].name;
		sv[i].script.data = (uint8_t *)o->scripts[i].data;
		sv[i].script.len = o->scripts[i].len;
		spv[i] = &sv[i];
	}
	bi.name = (char *)(o->name != NULL ? o->name : "");
	bi.from = (char *)(o->from != NULL ? o->from : "");
	bi.docker = o->docker;
	bi.no_replace = o->no_replace;
	bi.cpus = o->cpus;
	bi.memory_mib = o->memory_mib;
	bi.disk_gib = o->disk_gib;
	bi.n_provision = o->nscripts;
	bi.provision = spv;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_BUILD_IMAGE;
	req.build_image = &bi;
	rc = image_answer(image_call(c, &req, o, err), out, err);
	free(spv);
	free(sv);
	return rc;
}

static int
do_image_get(struct al_client *c, const char *name, struct al_image *out,
    struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__GetImage g = AGENTLANE__V1__GET_IMAGE__INIT;

	g.name = (char *)name;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_GET_IMAGE;
	req.get_image = &g;
	return image_answer(image_call(c, &req, NULL, err), out, err);
}

static int
do_image_remove(struct al_client *c, const char *name, struct al_image *out,
    struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__RemoveImage r = AGENTLANE__V1__REMOVE_IMAGE__INIT;

	r.name = (char *)name;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_REMOVE_IMAGE;
	req.remove_image = &r;
	return image_answer(image_call(c, &req, NULL, err), out, err);
}

static int
do_commit(struct al_client *c, const char *lane, const char *image,
    const struct al_commit_opts *o, struct al_image *out,
    struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__CommitLane cl = AGENTLANE__V1__COMMIT_LANE__INIT;
	struct al_image_build_opts po = AL_IMAGE_BUILD_OPTS_INIT;

	cl.lane = (char *)(lane != NULL ? lane : "");
	cl.image = (char *)(image != NULL ? image : "");
	cl.no_workspace = o != NULL && o->no_workspace;
	if (o != NULL) {
		po.progress = o->progress;
		po.arg = o->arg;
	}
	req.body_case = AGENTLANE__V1__REQUEST__BODY_COMMIT_LANE;
	req.commit_lane = &cl;
	return image_answer(image_call(c, &req, &po, err), out, err);
}

static int
do_image_list(struct al_client *c, struct al_image **images, size_t *n,
    struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__ListImages li = AGENTLANE__V1__LIST_IMAGES__INIT;
	AlResponse *resp;
	struct al_image *v;

	req.body_case = AGENTLANE__V1__REQUEST__BODY_LIST_IMAGES;
	req.list_images = &li;
	if ((resp = image_call(c, &req, NULL, err)) == NULL)
		return -1;
	if (resp->body_case != AGENTLANE__V1__RESPONSE__BODY_IMAGE_LIST) {
		al_error_from_response(err, resp);
		al_response_free(resp);
		return -1;
	}
	if ((v = calloc(resp->image_list->n_images + 1, sizeof *v)) == NULL) {
		al_response_free(resp);
		al_set_error(err, AL_IO, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < resp->image_list->n_images; i++)
		image_from_proto(&v[i], resp->image_list->images[i]);
	*n = resp->image_list->n_images;
	*images = v;
	al_response_free(resp);
	return 0;
}

AL_API enum al_code
al_image_build(struct al_client *c, const struct al_image_build_opts *o,
    struct al_image *out, struct al_error *err)
{
	struct al_image_build_opts opts;
	struct al_error local;

	err = al_error_begin(err, &local);
	if (o != NULL) {
		if (al_opts_copy(&opts, sizeof opts, o, err) == -1)
			return al_result(-1, err);
		o = &opts;
	}
	return al_result(do_image_build(c, o, out, err), err);
}

AL_API enum al_code
al_image_get(struct al_client *c, const char *name, struct al_image *out,
    struct al_error *err)
{
	struct al_error local;

	err = al_error_begin(err, &local);
	return al_result(do_image_get(c, name, out, err), err);
}

AL_API enum al_code
al_image_remove(struct al_client *c, const char *name, struct al_image *out,
    struct al_error *err)
{
	struct al_error local;

	err = al_error_begin(err, &local);
	return al_result(do_image_remove(c, name, out, err), err);
}

AL_API enum al_code
al_image_list(struct al_client *c, struct al_image **images, size_t *n,
    struct al_error *err)
{
	struct al_error local;

	err = al_error_begin(err, &local);
	return al_result(do_image_list(c, images, n, err), err);
}

AL_API enum al_code
al_commit(struct al_client *c, const char *lane, const char *image,
    const struct al_commit_opts *o, struct al_image *out, struct al_error *err)
{
	struct al_commit_opts opts;
	struct al_error local;

	err = al_error_begin(err, &local);
	if (o != NULL) {
		if (al_opts_copy(&opts, sizeof opts, o, err) == -1)
			return al_result(-1, err);
		o = &opts;
	}
	return al_result(do_commit(c, lane, image, o, out, err), err);
}

AL_API void
al_images_free(struct al_image *images)
{
	free(images);
}
