/* Image commands: image build|ls|show|rm, commit, and the --provision path
 * of create. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"

/* A provision script is sent whole in the request frame (1 MiB at most). */
#define CTL_SCRIPT_MAX (512u * 1024u)

static void
build_progress(const char *phase, const char *message, void *arg)
{
	fprintf(stderr, "agent-lanectl: %s%s%s\n", phase,
	    message[0] ? ": " : "", message);
}

/* Reads a provision script; 0, or -1 after printing why. */
static int
read_script(const char *path, struct al_provision_script *s)
{
	struct stat sb;
	char *buf;
	ssize_t r;
	size_t len = 0;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1 ||
	    fstat(fd, &sb) == -1) {
		ctl_errx("%s: %s", path, strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	if (!S_ISREG(sb.st_mode) || sb.st_size > (off_t)CTL_SCRIPT_MAX) {
		ctl_errx("%s: not a regular file of at most %u KiB", path,
		    CTL_SCRIPT_MAX / 1024);
		close(fd);
		return -1;
	}
	if ((buf = malloc(CTL_SCRIPT_MAX + 1)) == NULL) {
		ctl_errx("out of memory");
		close(fd);
		return -1;
	}
	while ((r = read(fd, buf + len, CTL_SCRIPT_MAX + 1 - len)) != 0) {
		if (r == -1) {
			if (errno == EINTR && !ctl_interrupted())
				continue;
			ctl_errx("%s: %s", path, strerror(errno));
			free(buf);
			close(fd);
			return -1;
		}
		len += (size_t)r;
		if (len > CTL_SCRIPT_MAX) {
			ctl_errx("%s: larger than %u KiB", path,
			    CTL_SCRIPT_MAX / 1024);
			free(buf);
			close(fd);
			return -1;
		}
	}
	close(fd);
	/* The name is what progress and errors show: the file's base name. */
	s->name = strrchr(path, '/') != NULL ? strrchr(path, '/') + 1 : path;
	s->data = buf;
	s->len = len;
	return 0;
}

static void
free_scripts(struct al_provision_script *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((void *)v[i].data);
}

int
ctl_build_image(struct ctl *ctl, struct al_image_build_opts *o,
    const char *const *paths, size_t npaths, struct al_image *im)
{
	struct al_provision_script scripts[AL_IMAGE_SCRIPTS_MAX];
	struct al_error err;
	size_t n = 0;
	int rc;

	if (npaths > AL_IMAGE_SCRIPTS_MAX)
		return ctl_usage("at most %d provision scripts",
		    AL_IMAGE_SCRIPTS_MAX);
	for (; n < npaths; n++)
		if (read_script(paths[n], &scripts[n]) == -1) {
			free_scripts(scripts, n);
			return CTL_EXIT_FAILURE;
		}
	o->scripts = scripts;
	o->nscripts = n;
	o->progress = build_progress;
	o->stdout_fd = STDERR_FILENO;	/* stdout is for the result */
	o->stderr_fd = STDERR_FILENO;
	rc = al_image_build(ctl->client, o, im, &err) == AL_OK ? 0 : -1;
	free_scripts(scripts, n);
	if (rc == -1 && ctl_interrupted()) {
		char msg[256];

		/* Our connection's close is what cancels it: say so. */
		bool named = o->name != NULL && o->name[0] != '\0';

		snprintf(msg, sizeof msg, "image build%s%s cancelled; the daemon "
		    "deletes its half-built VM", named ? " " : "",
		    named ? o->name : "");
		ctl_report(ctl, CTL_CODE_INTERRUPTED, NULL, NULL, msg, NULL);
		return CTL_EXIT_FAILURE;
	}
	if (rc == -1)
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	if (im->cached)
		fprintf(stderr, "agent-lanectl: image %s is up to date "
		    "(identical inputs; nothing was built)\n", im->name);
	return 0;
}

static void
image_json(FILE *f, const struct al_image *im)
{
	char t[32];

	fputs("{\"name\":", f);
	ctl_json_string(f, im->name);
	fputs(",\"id\":", f);
	ctl_json_string(f, im->id);
	fputs(",\"from\":", f);
	ctl_json_string(f, im->from);
	fprintf(f, ",\"docker\":%s,\"cpus\":%u,\"memory_mib\":%u,"
	    "\"disk_gib\":%u,\"scripts\":[", im->docker ? "true" : "false",
	    im->cpus, im->memory_mib, im->disk_gib);
	for (size_t i = 0; i < im->nscripts; i++) {
		if (i > 0)
			fputc(',', f);
		ctl_json_string(f, im->scripts[i]);
	}
	ctl_time(im->created_at_ms, t, sizeof t);
	fputs("],\"created_at\":", f);
	ctl_json_string(f, t);
	fprintf(f, ",\"created_at_ms\":%lld,\"build_ms\":%llu,\"in_use\":%u",
	    (long long)im->created_at_ms, (unsigned long long)im->build_ms,
	    im->in_use);
	/* Where it came from: a build, or a commit of a lane. */
	fputs(",\"origin\":", f);
	ctl_json_string(f, im->committed_from[0] ? "commit" : "build");
	if (im->committed_from[0]) {
		ctl_time(im->committed_at_ms, t, sizeof t);
		fputs(",\"committed_from\":", f);
		ctl_json_string(f, im->committed_from);
		fputs(",\"committed_alias\":", f);
		ctl_json_string(f, im->committed_alias);
		fputs(",\"committed_at\":", f);
		ctl_json_string(f, t);
		fprintf(f, ",\"committed_at_ms\":%lld",
		    (long long)im->committed_at_ms);
	}
	fputc('}', f);
}

/* ORIGIN of image ls: "build", or "commit LANE" (its alias if it had one). */
static void
image_origin(const struct al_image *im, char *buf, size_t len)
{
	if (im->committed_from[0] == '\0')
		snprintf(buf, len, "build");
	else
		snprintf(buf, len, "commit %s", im->committed_alias[0] ?
		    im->committed_alias : im->committed_from);
}

static int
image_build(struct ctl *ctl, const struct ctl_parsed *p)
{
	struct al_image_build_opts o = AL_IMAGE_BUILD_OPTS_INIT;
	struct al_image im;
	const char *paths[AL_IMAGE_SCRIPTS_MAX], *v;
	size_t npaths = 0;
	uint64_t n;
	int r;

	for (size_t i = 0; i < p->nopts; i++) {
		v = p->opts[i].value;
		if (ctl_is(&p->opts[i], "provision")) {
			if (npaths == AL_IMAGE_SCRIPTS_MAX)
				return ctl_usage("at most %d provision scripts",
				    AL_IMAGE_SCRIPTS_MAX);
			paths[npaths++] = v;
		} else if (ctl_is(&p->opts[i], "from"))
			o.from = v;
		else if (ctl_is(&p->opts[i], "docker"))
			o.docker = true;
		else if (ctl_is(&p->opts[i], "no-replace"))
			o.no_replace = true;
		else if (ctl_is(&p->opts[i], "cpus")) {
			if (!ctl_uint(v, 1024, &n) || n == 0)
				return ctl_usage("--cpus needs a positive number");
			o.cpus = (uint32_t)n;
		} else if (ctl_is(&p->opts[i], "memory")) {
			if ((r = ctl_opt_memory("--memory", v,
			    &o.memory_mib)) != 0)
				return r;
		} else if (ctl_is(&p->opts[i], "disk")) {
			if ((r = ctl_opt_disk("--disk", v, &o.disk_gib)) != 0)
				return r;
		}
	}
	if (p->noperands != 2)
		return ctl_usage("usage: agent-lanectl image build NAME "
		    "[--provision FILE]... [--from IMAGE] [--docker] [--cpus N] "
		    "[--memory SIZE] [--disk SIZE] [--no-replace]");
	o.name = p->operands[1];
	if ((r = ctl_build_image(ctl, &o, paths, npaths, &im)) != 0)
		return r;
	if (ctl->json) {
		image_json(stdout, &im);
		fputc('\n', stdout);
	} else
		printf("%s\n", im.name);
	return 0;
}

static int
image_ls(struct ctl *ctl, const struct ctl_parsed *p)
{
	struct al_image *v;
	struct al_error err;
	size_t n;

	if (p->noperands != 1 || p->nopts > 0)
		return ctl_usage("usage: agent-lanectl image ls [--json]");
	if (al_image_list(ctl->client, &v, &n, &err) != AL_OK)
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	if (ctl->json) {
		fputc('[', stdout);
		for (size_t i = 0; i < n; i++) {
			if (i > 0)
				fputc(',', stdout);
			image_json(stdout, &v[i]);
		}
		fputs("]\n", stdout);
	} else {
		printf("%-24s %-12s %4s %8s %7s %-6s  %-20s  %s\n", "NAME",
		    "ID", "CPUS", "MEMORY", "DISK", "DOCKER", "CREATED",
		    "ORIGIN");
		for (size_t i = 0; i < n; i++) {
			char t[32], mem[16], disk[16], origin[96];

			ctl_time(v[i].created_at_ms, t, sizeof t);
			ctl_bytes((uint64_t)v[i].memory_mib << 20, mem,
			    sizeof mem);
			ctl_bytes((uint64_t)v[i].disk_gib << 30, disk,
			    sizeof disk);
			image_origin(&v[i], origin, sizeof origin);
			printf("%-24s %-12.12s %4u %8s %7s %-6s  %-20s  %s\n",
			    v[i].name, v[i].id, v[i].cpus, mem, disk,
			    v[i].docker ? "yes" : "no", t, origin);
		}
	}
	al_images_free(v);
	return 0;
}

static int
image_show(struct ctl *ctl, const struct ctl_parsed *p)
{
	struct al_image im;
	struct al_error err;
	char t[32], size[16];

	if (p->noperands != 2 || p->nopts > 0)
		return ctl_usage("usage: agent-lanectl image show IMAGE [--json] "
		    "(a name, id or id prefix)");
	if (al_image_get(ctl->client, p->operands[1], &im, &err) != AL_OK)
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	if (ctl->json) {
		image_json(stdout, &im);
		fputc('\n', stdout);
		return 0;
	}
	printf("name:     %s\n", im.name);
	printf("id:       %s\n", im.id);
	printf("from:     %s\n", im.from[0] ? im.from : "-");
	printf("docker:   %s\n", im.docker ? "yes (rootless)" : "no");
	printf("cpus:     %u\n", im.cpus);
	ctl_bytes((uint64_t)im.memory_mib << 20, size, sizeof size);
	printf("memory:   %s\n", size);
	ctl_bytes((uint64_t)im.disk_gib << 30, size, sizeof size);
	printf("disk:     %s\n", size);
	for (size_t i = 0; i < im.nscripts; i++)
		printf("script:   %s\n", im.scripts[i]);
	ctl_time(im.created_at_ms, t, sizeof t);
	printf("created:  %s\n", t);
	printf("build:    %.1f s\n", im.build_ms / 1000.0);
	printf("in use:   %u\n", im.in_use);
	if (im.committed_from[0]) {
		ctl_time(im.committed_at_ms, t, sizeof t);
		printf("origin:   commit of lane %s%s%s%s at %s, base %s\n",
		    im.committed_from, im.committed_alias[0] ? " (" : "",
		    im.committed_alias, im.committed_alias[0] ? ")" : "", t,
		    im.from[0] ? im.from : "the lane template");
	} else
		printf("origin:   build\n");
	return 0;
}

static int
image_rm(struct ctl *ctl, const struct ctl_parsed *p)
{
	struct al_error err;
	struct al_image im;
	int status = 0;
	bool first = true;

	if (p->noperands < 2 || p->nopts > 0)
		return ctl_usage("usage: agent-lanectl image rm IMAGE... (names, "
		    "ids or id prefixes)");
	if (ctl->json)
		fputc('[', stdout);
	for (size_t i = 1; i < p->noperands; i++) {
		if (al_image_remove(ctl->client, p->operands[i], &im,
		    &err) != AL_OK) {
			status = ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
			if (ctl_interrupted())
				break;
			continue;
		}
		if (ctl->json) {
			if (!first)
				fputc(',', stdout);
			ctl_json_string(stdout, im.name);
		} else
			printf("%s\n", im.name);
		first = false;
	}
	if (ctl->json)
		fputs("]\n", stdout);
	return status;
}

int
cmd_commit(struct ctl *ctl, int argc, char **argv)
{
	struct al_commit_opts o = AL_COMMIT_OPTS_INIT;
	struct ctl_parsed p;
	struct al_image im;
	struct al_error err;
	int rc;

	if ((rc = ctl_parse(ctl, argc, argv, &p)) != CTL_CONTINUE)
		return rc;
	for (size_t i = 0; i < p.nopts; i++)
		if (ctl_is(&p.opts[i], "no-workspace"))
			o.no_workspace = true;
	if (p.noperands != 2)
		return ctl_usage("usage: agent-lanectl commit LANE IMAGE "
		    "[--no-workspace]");
	o.progress = build_progress;
	if (al_commit(ctl->client, p.operands[0], p.operands[1], &o, &im,
	    &err) != AL_OK) {
		if (ctl_interrupted()) {
			ctl_report(ctl, CTL_CODE_INTERRUPTED, NULL, NULL,
			    "stopped waiting; the daemon finishes the commit "
			    "(agent-lanectl image ls)", NULL);
			return CTL_EXIT_FAILURE;
		}
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	}
	if (ctl->json) {
		image_json(stdout, &im);
		fputc('\n', stdout);
	} else
		printf("%s\n", im.name);
	return 0;
}

const struct ctl_subcommand ctl_image_subcommands[] = {
	{ "build", image_build, NULL, "NAME", "make a stopped, provisioned VM "
	    "from the lane template: each --provision script runs as root (a #! "
	    "line picks the interpreter), its output on standard error; "
	    "identical inputs build nothing; other inputs replace the image of "
	    "that name once ready (--no-replace: refuse); prints the name. "
	    "Ctrl-C cancels and deletes the half-built VM", true },
	{ "ls", image_ls, "list", "", "the images", true },
	{ "show", image_show, NULL, "IMAGE", "one image (a name, an id or an id "
	    "prefix)", true },
	{ "rm", image_rm, "remove", "IMAGE...", "remove images (refused while a "
	    "lane is being cloned from one)", true },
	{ NULL, NULL, NULL, NULL, NULL, false },
};
