/*
 * Test hooks of the test build of the daemon (build/tests/agent-laned-test,
 * agent-laned.c compiled with -DLANED_TEST_HOOKS). Never in agent-laned.
 */
#ifndef LANED_TESTHOOKS_H
#define LANED_TESTHOOKS_H

struct laned;

/*
 * AGENT_LANED_TEST_RESOLVE="NAME=ADDR[,NAME=ADDR...]": every lane proxy
 * resolves with this table instead of DNS, and trusts its answers (skips
 * the rebinding vetting), which is how a test reaches its own loopback
 * server by name. NAME=!ADDR is an answer that is vetted like DNS (a test
 * of the rebinding refusal). Names not in the table have no address.
 *
 * AGENT_LANED_TEST_TRUST=/path/ca.pem: lane proxies verify intercepted
 * upstreams against the CA certificates in that file instead of the
 * system trust store (a loopback upstream with its own test CA stands in
 * for a real host); the daemon stops if it cannot be loaded.
 */
void testhooks_init(struct laned *);

/*
 * AGENT_LANED_TEST_SECURE_HEAP=off: the daemon sets no secure heap up,
 * so that secret values take the ordinary-memory path secmem.h falls back
 * to (tests/regress/secrets.sh checks its wipes). Returns whether to set
 * it up.
 */
int testhooks_secmem(void);

#endif
