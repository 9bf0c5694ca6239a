/* Image commands: image build|ls|show|rm, and the --provision path of create. */
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
	rc = al_image_build(ctl->client, o, im, &err);
	free_scripts(scripts, n);
	if (rc == -1)
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	if (im->cached)
		fprintf(stderr, "agent-lanectl: image %s is up to date "
		    "(identical inputs; nothing was built)\n", im->name);
	return 0;
}

static bool
gib_opt(const char *v, uint32_t *mib)
{
	char *end;
	double gib = strtod(v, &end);

	if (*end != '\0' || gib < 0.25 || gib > 4096)
		return false;
	*mib = (uint32_t)(gib * 1024 + 0.5);
	return true;
}

static int
image_build(struct ctl *ctl, int argc, char **argv)
{
	struct al_image_build_opts o;
	struct al_image im;
	const char *paths[AL_IMAGE_SCRIPTS_MAX], *name = NULL, *v;
	size_t npaths = 0;
	uint64_t n;
	int r;

	memset(&o, 0, sizeof o);
	for (int i = 1; i < argc; i++) {
		if ((r = ctl_opt(argc, argv, &i, "--provision", &v)) != 0) {
			if (r < 0)
				return ctl_usage("--provision needs a FILE");
			if (npaths == AL_IMAGE_SCRIPTS_MAX)
				return ctl_usage("at most %d provision scripts",
				    AL_IMAGE_SCRIPTS_MAX);
			paths[npaths++] = v;
		} else if ((r = ctl_opt(argc, argv, &i, "--from", &v)) != 0) {
			if (r < 0)
				return ctl_usage("--from needs an IMAGE");
			o.from = v;
		} else if (strcmp(argv[i], "--docker") == 0)
			o.docker = true;
		else if ((r = ctl_opt(argc, argv, &i, "--cpus", &v)) != 0) {
			if (r < 0 || !ctl_uint(v, 1024, &n) || n == 0)
				return ctl_usage("--cpus needs a positive number");
			o.cpus = (uint32_t)n;
		} else if ((r = ctl_opt(argc, argv, &i, "--memory", &v)) != 0) {
			if (r < 0 || !gib_opt(v, &o.memory_mib))
				return ctl_usage("--memory needs GiB, e.g. 4 or 0.5");
		} else if ((r = ctl_opt(argc, argv, &i, "--disk", &v)) != 0) {
			if (r < 0 || !ctl_uint(v, 65536, &n) || n == 0)
				return ctl_usage("--disk needs GiB, e.g. 30");
			o.disk_gib = (uint32_t)n;
		} else if (argv[i][0] != '-' && name == NULL)
			name = argv[i];
		else
			return ctl_usage("image build: unexpected argument %s",
			    argv[i]);
	}
	if (name == NULL)
		return ctl_usage("usage: agent-lanectl image build NAME "
		    "[--provision FILE]... [--from IMAGE] [--docker] [--cpus N] "
		    "[--memory GIB] [--disk GIB]");
	o.name = name;
	if ((r = ctl_build_image(ctl, &o, paths, npaths, &im)) != 0)
		return r;
	printf("%s\n", im.name);
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
	fprintf(f, ",\"created_at_ms\":%lld,\"build_ms\":%llu,\"in_use\":%u}",
	    (long long)im->created_at_ms, (unsigned long long)im->build_ms,
	    im->in_use);
}

static int
image_ls(struct ctl *ctl, int argc, char **argv)
{
	struct al_image *v;
	struct al_error err;
	bool json = false;
	size_t n;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else
			return ctl_usage("image ls: unexpected argument %s",
			    argv[i]);
	}
	if (al_image_list(ctl->client, &v, &n, &err) == -1)
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	if (json) {
		fputc('[', stdout);
		for (size_t i = 0; i < n; i++) {
			if (i > 0)
				fputc(',', stdout);
			image_json(stdout, &v[i]);
		}
		fputs("]\n", stdout);
	} else {
		printf("%-24s %-12s %4s %8s %6s %-6s  %s\n", "NAME", "ID", "CPUS",
		    "MEMORY", "DISK", "DOCKER", "CREATED");
		for (size_t i = 0; i < n; i++) {
			char t[32], mem[16];

			ctl_time(v[i].created_at_ms, t, sizeof t);
			snprintf(mem, sizeof mem, "%gGiB",
			    v[i].memory_mib / 1024.0);
			printf("%-24s %-12.12s %4u %8s %4uGiB %-6s  %s\n",
			    v[i].name, v[i].id, v[i].cpus, mem, v[i].disk_gib,
			    v[i].docker ? "yes" : "no", t);
		}
	}
	free(v);
	return 0;
}

static int
image_show(struct ctl *ctl, int argc, char **argv)
{
	struct al_image im;
	struct al_error err;
	const char *name = NULL;
	bool json = false;
	char t[32];

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (name == NULL)
			name = argv[i];
		else
			return ctl_usage("image show: unexpected argument %s",
			    argv[i]);
	}
	if (name == NULL)
		return ctl_usage("usage: agent-lanectl image show NAME [--json]");
	if (al_image_get(ctl->client, name, &im, &err) == -1)
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	if (json) {
		image_json(stdout, &im);
		fputc('\n', stdout);
		return 0;
	}
	printf("name:     %s\n", im.name);
	printf("id:       %s\n", im.id);
	printf("from:     %s\n", im.from[0] ? im.from : "-");
	printf("docker:   %s\n", im.docker ? "yes (rootless)" : "no");
	printf("cpus:     %u\n", im.cpus);
	printf("memory:   %g GiB\n", im.memory_mib / 1024.0);
	printf("disk:     %u GiB\n", im.disk_gib);
	for (size_t i = 0; i < im.nscripts; i++)
		printf("script:   %s\n", im.scripts[i]);
	ctl_time(im.created_at_ms, t, sizeof t);
	printf("created:  %s\n", t);
	printf("build:    %.1f s\n", im.build_ms / 1000.0);
	printf("in use:   %u\n", im.in_use);
	return 0;
}

static int
image_rm(struct ctl *ctl, int argc, char **argv)
{
	struct al_error err;
	int status = 0;

	if (argc < 2)
		return ctl_usage("usage: agent-lanectl image rm NAME...");
	for (int i = 1; i < argc; i++)
		if (al_image_remove(ctl->client, argv[i], NULL, &err) == -1) {
			status = ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
			if (ctl_interrupted())
				break;
		}
	return status;
}

int
cmd_image(struct ctl *ctl, int argc, char **argv)
{
	if (argc < 2)
		return ctl_usage("usage: agent-lanectl image build|ls|show|rm ...");
	if (strcmp(argv[1], "build") == 0)
		return image_build(ctl, argc - 1, argv + 1);
	if (strcmp(argv[1], "ls") == 0 || strcmp(argv[1], "list") == 0)
		return image_ls(ctl, argc - 1, argv + 1);
	if (strcmp(argv[1], "show") == 0)
		return image_show(ctl, argc - 1, argv + 1);
	if (strcmp(argv[1], "rm") == 0)
		return image_rm(ctl, argc - 1, argv + 1);
	return ctl_usage("image: unknown command %s (build, ls, show, rm)",
	    argv[1]);
}
