/*
 * The configuration file parser with arbitrary bytes: whatever the file
 * holds, loading it neither crashes nor leaves a value outside its range.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static char path[64];

static void
cleanup(void)
{
	if (path[0] != '\0')
		unlink(path);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config c;
	char err[512];
	FILE *f;

	if (path[0] == '\0') {
		int fd;

		snprintf(path, sizeof path, "/tmp/fuzz_config.XXXXXX");
		if ((fd = mkstemp(path)) == -1)
			abort();
		close(fd);
		atexit(cleanup);
		/* config_defaults reads these: keep runs reproducible. */
		setenv("HOME", "/nonexistent-home", 1);
		unsetenv("AGENT_LANE_CONFIG");
		unsetenv("AGENT_LANE_SOCKET");
		unsetenv("AGENT_LANE_STATE_DIR");
		unsetenv("AGENT_LANE_LIMACTL");
	}
	if ((f = fopen(path, "w")) == NULL)
		abort();
	if (size > 0 && fwrite(data, 1, size, f) != size)
		abort();
	if (fclose(f) != 0)
		abort();

	config_defaults(&c);
	err[0] = '\0';
	if (config_load_file(&c, path, true, err, sizeof err) == -1) {
		if (err[0] == '\0')
			abort();
	} else {
		/* The ranges config.c promises for what it accepted. */
		if (c.max_lanes < 1 || c.max_lanes > 1024 ||
		    c.default_memory_mib < 256 || c.default_memory_mib > (1u << 22) ||
		    c.max_frame_bytes < 4096 || c.max_frame_bytes > (1u << 20) ||
		    c.request_timeout_ms < 100 || c.request_timeout_ms > 3600000 ||
		    c.socket_path[0] != '/' || c.state_dir[0] != '/')
			abort();
		(void)config_finalize(&c, err, sizeof err);
	}
	config_free(&c);
	return 0;
}
