/*
 * Frames between agent-laned and the guest helper (daemon/guest-helper.pl),
 * carried over the stdin/stdout of `limactl shell`. Everything read here
 * comes from inside a lane and is hostile: the guest can replace perl, print
 * from its login profile, or write garbage. The parser is bounded in every
 * dimension and fuzzed (tests/fuzz/fuzz_guestproto.c).
 */
#ifndef LANED_GUESTPROTO_H
#define LANED_GUESTPROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GUEST_MAGIC "\0ALGX01\n"
#define GUEST_MAGIC_LEN 8
#define GUEST_HEADER 5
/* The helper writes at most 64 KiB per frame; allow some slack. */
#define GUEST_MAX_PAYLOAD (256u * 1024u)
/* Login-profile noise tolerated before the helper's magic line. */
#define GUEST_MAX_PREAMBLE (64u * 1024u)

enum guest_rc {
	GUEST_FRAME = 0,	/* *out holds a frame */
	GUEST_NEED_MORE,	/* consume *used bytes and read more */
	GUEST_ERROR,		/* the stream is unusable; reason set */
};

enum guest_frame_type {
	GUEST_STARTED = 'P',	/* data: pid of the command */
	GUEST_STDOUT = 'O',
	GUEST_STDERR = 'E',
	GUEST_EXIT = 'X',	/* code or sig set */
	GUEST_FAILED = 'F',	/* what/err_no/message set */
	GUEST_ACK = 'K',	/* acked set: stdin bytes the helper took */
};

struct guest_frame {
	char type;
	const uint8_t *data;	/* points into the caller's buffer */
	size_t len;
	int code;		/* GUEST_EXIT: exit status 0..255, or -1 */
	int sig;		/* GUEST_EXIT: signal 1..127, or 0 */
	char what[16];		/* GUEST_FAILED: "cwd" */
	int err_no;
	char message[256];
	uint32_t acked;		/* GUEST_ACK */
};

struct guest_parser {
	bool synced;
	size_t skipped;
	const char *reason;
};

void guest_parser_init(struct guest_parser *);
/*
 * Looks at buf[0..len). On GUEST_FRAME or GUEST_NEED_MORE, *used bytes are
 * consumed (the frame's data stays valid until the caller drops them).
 */
enum guest_rc guest_parse(struct guest_parser *, const uint8_t *buf,
    size_t len, struct guest_frame *out, size_t *used);

/* The payload length a frame header announces (not checked here). */
uint32_t guest_header_len(const uint8_t hdr[GUEST_HEADER]);

/* Writes a 5-byte frame header for the helper's input. */
void guest_header(uint8_t hdr[GUEST_HEADER], char type, uint32_t len);

/*
 * The lane's exec channel (`perl -e HELPER mux`): one helper for every exec
 * of a lane. Each frame is a type, an exec id and a length; an M frame
 * carries a piece of one exec's stream of the frames above, byte for byte.
 */
#define GUEST_CHAN_MAGIC "\0ALGM01\n"
#define GUEST_CHAN_HEADER 9
/* The channel helper sends at most 64 KiB of an exec's stream per frame. */
#define GUEST_CHAN_MAX_PAYLOAD (64u * 1024u)

enum guest_chan_type {
	GUEST_CHAN_NEW = 'N',	/* to the guest: start an exec (its window) */
	GUEST_CHAN_DATA = 'M',	/* either way: bytes of the exec's stream */
	GUEST_CHAN_GRANT = 'G',	/* to the guest: more output may come */
	GUEST_CHAN_END = 'Q',	/* either way: the exec's stream is over */
};

struct guest_chan_frame {
	char type;		/* GUEST_CHAN_DATA or GUEST_CHAN_END */
	uint32_t id;
	uint32_t len;		/* payload bytes after the header */
};

struct guest_chan_parser {
	bool synced;
	size_t skipped;
	const char *reason;
};

void guest_chan_parser_init(struct guest_chan_parser *);
/*
 * Looks at buf[0..len) for the next frame header. GUEST_FRAME: *out is the
 * header and *used counts the bytes up to the payload (login noise and the
 * magic line included); the payload is not looked at. GUEST_NEED_MORE:
 * *used bytes may be dropped; read more.
 */
enum guest_rc guest_chan_parse(struct guest_chan_parser *, const uint8_t *buf,
    size_t len, struct guest_chan_frame *out, size_t *used);
void guest_chan_header(uint8_t hdr[GUEST_CHAN_HEADER], char type,
    uint32_t id, uint32_t len);

#endif
