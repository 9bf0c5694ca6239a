/*
 * al-netpolicy-print MODE rules|yaml|check [PORT] [sudo] [docker]: prints what
 * daemon/netpolicy.c generates, for tests/regress/netpolicy.sh. PORT is
 * the proxy port (rules, yaml) or the probe port (check). A test program,
 * built under build/tests and never installed.
 *
 * al-netpolicy-print schema: the registry schema version this build
 * writes (registry_schema_version), so that suites never hard-code it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netpolicy.h"
#include "registry.h"

int
main(int argc, char **argv)
{
	char buf[8192];
	enum netpolicy_mode m;
	unsigned long port = argc > 3 ? strtoul(argv[3], NULL, 10) : 0;
	bool sudo = false, docker = false;
	int n;

	for (int i = 4; i < argc; i++) {
		sudo |= strcmp(argv[i], "sudo") == 0;
		docker |= strcmp(argv[i], "docker") == 0;
	}

	if (argc == 2 && strcmp(argv[1], "schema") == 0) {
		printf("%d\n", registry_schema_version());
		return 0;
	}
	if (argc < 3 || !netpolicy_mode_parse(argv[1], &m) || port > 65535) {
		fprintf(stderr, "usage: al-netpolicy-print MODE rules|yaml|check [PORT] [sudo] [docker]\n");
		return 2;
	}
	if (strcmp(argv[2], "rules") == 0)
		n = netpolicy_ruleset(m, (uint16_t)port, buf, sizeof buf);
	else if (strcmp(argv[2], "yaml") == 0)
		n = netpolicy_yaml(m, (uint16_t)port, sudo, docker, buf,
		    sizeof buf);
	else if (strcmp(argv[2], "check") == 0)
		n = netpolicy_check_script(m, sudo, (uint16_t)port, NULL, buf,
		    sizeof buf);
	else
		n = -1;
	if (n < 0) {
		fprintf(stderr, "al-netpolicy-print: cannot render\n");
		return 1;
	}
	return fwrite(buf, 1, (size_t)n, stdout) == (size_t)n ? 0 : 1;
}
