// One upstream of the differential smuggling suite (tests/regress/smuggle.py):
// Node's own http/https server, whose parser is llhttp. No npm packages.
//
//   node smuggle_node.js [CERT KEY]    https with that leaf, else plain http
//
// Prints JSON lines on stdout, in the order Node parsed the stream:
//   {"ev":"listen","port":N}
//   {"ev":"accept","conn":C}
//   {"ev":"head","conn":C,"method":M,"target":T,"version":V,"headers":[[k,v]...]}
//   {"ev":"req","conn":C,"target":T,"body":B,"complete":bool,"trailers":[...]}
//   {"ev":"error","conn":C,"code":E}          the parser refused the bytes
//   {"ev":"close","conn":C}                   after every record of C
// Strings are the bytes as latin-1. Each request is answered once its body
// has ended: 200, "X-Upstream: node", and "ok" or, for a target under
// /echo, the request's headers and body (what an echoing host hands back).
// Test code, never installed.
'use strict';
const fs = require('fs');
const http = require('http');
const https = require('https');

const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const tls = process.argv.length >= 4;
let nconn = 0;
const ids = new WeakMap();	// socket -> {id, pending: Set of open requests}

function track(sock) {
	const st = { id: ++nconn, pending: new Set() };
	ids.set(sock, st);
	out({ ev: 'accept', conn: st.id });
	sock.on('close', () => {
		// Requests whose body never ended: recorded before the close.
		for (const p of st.pending)
			p.flush(false);
		out({ ev: 'close', conn: st.id });
	});
}

function pairs(raw) {
	const v = [];
	for (let i = 0; i + 1 < raw.length; i += 2)
		v.push([raw[i], raw[i + 1]]);
	return v;
}

function onRequest(req, res) {
	const st = ids.get(req.socket) || { id: 0, pending: new Set() };
	const chunks = [];
	out({ ev: 'head', conn: st.id, method: req.method, target: req.url,
	    version: req.httpVersion, headers: pairs(req.rawHeaders) });
	const p = {
		done: false,
		flush(complete) {
			if (p.done)
				return;
			p.done = true;
			st.pending.delete(p);
			out({ ev: 'req', conn: st.id, target: req.url,
			    body: Buffer.concat(chunks).toString('latin1'),
			    complete, trailers: pairs(req.rawTrailers) });
		},
	};
	st.pending.add(p);
	req.on('data', (d) => chunks.push(d));
	req.on('error', () => {});
	req.on('end', () => {
		p.flush(true);
		let body = 'ok';
		if (req.url.startsWith('/echo'))
			body = JSON.stringify({ headers: req.rawHeaders,
			    body: Buffer.concat(chunks).toString('latin1') });
		const b = Buffer.from(body, 'latin1');
		res.writeHead(200, { 'X-Upstream': 'node',
		    'Content-Length': b.length, 'Content-Type': 'text/plain' });
		res.end(b);
	});
}

const server = tls ?
    https.createServer({ cert: fs.readFileSync(process.argv[2]),
	key: fs.readFileSync(process.argv[3]) }, onRequest) :
    http.createServer(onRequest);
server.on(tls ? 'secureConnection' : 'connection', track);
server.on('clientError', (err, sock) => {
	const st = ids.get(sock);
	out({ ev: 'error', conn: st ? st.id : 0, code: String(err.code) });
	if (sock.writable)
		sock.end('HTTP/1.1 400 Bad Request\r\nX-Upstream: node\r\n' +
		    'Content-Length: 0\r\nConnection: close\r\n\r\n');
	else
		sock.destroy();
});
server.on('tlsClientError', () => {});
server.listen(0, '127.0.0.1', () => out({ ev: 'listen',
    port: server.address().port }));
// The driver closes our stdin to end us.
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
