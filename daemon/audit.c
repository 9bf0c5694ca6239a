#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "gexec.h"
#include "laned.h"
#include "log.h"
#include "registry.h"
#include "text.h"

/* Guest bytes as printable UTF-8 for the registry, logs and JSON. */
static void
audit_text(char *dst, size_t dstlen, const uint8_t *src, size_t len)
{
	size_t o = 0, i = 0, n;
	uint8_t buf[5];

	while (i < len && o + 5 < dstlen) {
		memset(buf, 0, sizeof buf);
		memcpy(buf, src + i, len - i < 4 ? len - i : 4);
		if (src[i] < 0x20 || src[i] == 0x7f ||
		    (n = text_utf8_len(buf)) == 0 || n > len - i) {
			dst[o++] = '?';
			i++;
			continue;
		}
		memcpy(dst + o, src + i, n);
		o += n;
		i += n;
	}
	if (i < len && o + 4 <= dstlen) {
		memcpy(dst + o, "...", 3);
		o += 3;
	}
	dst[o] = '\0';
}

static void
audit_record(struct laned *d, const char *lane, const char *event,
    const char *detail)
{
	if (registry_event_append(d->reg, lane, event, detail) != REG_OK)
		log_warnx("lane %s: cannot record event %s", lane, event);
	if (registry_audit_trim(d->reg, lane, d->cfg.max_audit_events) !=
	    REG_OK)
		log_warnx("lane %s: cannot trim the audit events", lane);
}

void
audit_proxy(struct laned *d, const char *lane, const char *event,
    const char *detail)
{
	audit_record(d, lane, event, detail);
}

int
audit_exec_begin(struct laned *d, const char *lane, const uint8_t *argv0,
    size_t len, int64_t *id)
{
	char cmd[160];

	audit_text(cmd, sizeof cmd, argv0, len);
	if (registry_exec_begin(d->reg, lane, cmd, id) != REG_OK) {
		log_warnx("lane %s: cannot record the exec of %s: %s", lane, cmd,
		    registry_errmsg(d->reg));
		return -1;
	}
	return 0;
}

void
audit_exec(struct laned *d, const char *lane, int64_t id,
    const uint8_t *argv0, size_t len, const struct gexec_result *r,
    const char *failure)
{
	char cmd[160], detail[400];

	if (lane == NULL)
		return;
	audit_text(cmd, sizeof cmd, argv0, len);
	if (failure != NULL || r == NULL || r->end == GEXEC_FAILED)
		snprintf(detail, sizeof detail, "%s failed: %.200s", cmd,
		    failure != NULL ? failure : r != NULL ? r->message : "");
	else if (r->end == GEXEC_SIGNALED)
		snprintf(detail, sizeof detail, "%s signal=%d", cmd, r->sig);
	else
		snprintf(detail, sizeof detail, "%s exit=%d", cmd, r->code);
	if (registry_exec_end(d->reg, id, lane, "exec", detail) != REG_OK)
		log_warnx("lane %s: cannot record event exec", lane);
	if (registry_audit_trim(d->reg, lane, d->cfg.max_audit_events) !=
	    REG_OK)
		log_warnx("lane %s: cannot trim the audit events", lane);
}

void
audit_recover(struct laned *d)
{
	size_t n;

	if (registry_exec_recover(d->reg, AUDIT_INTERRUPTED, &n) != REG_OK)
		log_warnx("registry: cannot record the execs a restart "
		    "interrupted: %s", registry_errmsg(d->reg));
	else if (n > 0)
		log_info("registry: %zu exec%s %s", n, n == 1 ? "" : "s",
		    AUDIT_INTERRUPTED);
}

void
audit_copy(struct laned *d, const char *lane, const char *what,
    const char *path, uint64_t bytes, const char *failure)
{
	char p[300], detail[500];

	if (lane == NULL)
		return;
	audit_text(p, sizeof p, (const uint8_t *)path, strlen(path));
	if (failure != NULL)
		snprintf(detail, sizeof detail, "%s bytes=%llu failed: %.150s",
		    p, (unsigned long long)bytes, failure);
	else
		snprintf(detail, sizeof detail, "%s bytes=%llu", p,
		    (unsigned long long)bytes);
	audit_record(d, lane, what, detail);
}
