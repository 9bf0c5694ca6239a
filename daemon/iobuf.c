#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "iobuf.h"

#define IOBUF_STEP (256 * 1024)

enum iobuf_rc
iobuf_fill(struct evbuffer *buf, int fd, size_t limit)
{
	for (;;) {
		struct evbuffer_iovec v[2];
		struct iovec iov[2];
		size_t have = evbuffer_get_length(buf), want;
		ssize_t n;
		int nv, i;

		if (have >= limit)
			return IOBUF_FULL;
		want = limit - have < IOBUF_STEP ? limit - have : IOBUF_STEP;
		if ((nv = evbuffer_reserve_space(buf, (ssize_t)want, v, 2)) <= 0)
			return IOBUF_ERROR;
		for (i = 0; i < nv; i++) {
			iov[i].iov_base = v[i].iov_base;
			iov[i].iov_len = v[i].iov_len;
		}
		/* The reservation may be larger than asked; read only want. */
		if (iov[0].iov_len >= want) {
			iov[0].iov_len = want;
			nv = 1;
		} else if (nv == 2 && iov[0].iov_len + iov[1].iov_len > want)
			iov[1].iov_len = want - iov[0].iov_len;
		n = readv(fd, iov, nv);
		if (n <= 0) {
			(void)evbuffer_commit_space(buf, v, 0);
			if (n == 0)
				return IOBUF_EOF;
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return IOBUF_MORE;
			return IOBUF_ERROR;
		}
		for (i = 0; i < nv; i++) {
			size_t take = (size_t)n < iov[i].iov_len ?
			    (size_t)n : iov[i].iov_len;

			v[i].iov_len = take;
			n -= (ssize_t)take;
		}
		if (evbuffer_commit_space(buf, v, nv) != 0)
			return IOBUF_ERROR;
	}
}
