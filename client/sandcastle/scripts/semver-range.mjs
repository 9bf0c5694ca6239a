// The part of npm's semver rules the peer range needs, with no dependency:
// does a published version satisfy a range such as ">=0.12.0 <0.14.0" or
// "^0.12.0"? Ranges are "||"-separated sets of space-separated
// comparators (<, <=, >, >=, =, bare, ^, ~, and x/* wildcards). As in npm,
// a prerelease (0.13.0-beta.1) satisfies a set only if a comparator of that
// set names a prerelease of the same major.minor.patch.
// test/peer-range.test.mjs checks it against npm's own semver where npm
// ships it, so the two cannot drift apart unnoticed.

const VERSION = /^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/;

/** Parses "1.2.3[-pre][+build]"; throws on anything else. */
export function parseVersion(s) {
  const m = VERSION.exec(String(s).trim());
  if (!m) throw new Error(`not a semantic version: ${JSON.stringify(s)}`);
  return { major: +m[1], minor: +m[2], patch: +m[3], pre: m[4] ? m[4].split(".") : [] };
}

function comparePre(a, b) {
  if (!a.length || !b.length) return (b.length ? 1 : 0) - (a.length ? 1 : 0);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] === undefined) return -1;
    if (b[i] === undefined) return 1;
    const na = /^\d+$/.test(a[i]), nb = /^\d+$/.test(b[i]);
    if (na && nb && +a[i] !== +b[i]) return +a[i] < +b[i] ? -1 : 1;
    if (na !== nb) return na ? -1 : 1;
    if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return 0;
}

/** -1, 0 or 1 as a is lower than, equal to or higher than b (build ignored). */
export function compare(a, b) {
  for (const k of ["major", "minor", "patch"]) if (a[k] !== b[k]) return a[k] < b[k] ? -1 : 1;
  return comparePre(a.pre, b.pre);
}

const WILD = (p) => p === undefined || p === "x" || p === "X" || p === "*";

/** One comparator token to a list of [op, version] with wildcards expanded. */
function expand(tok) {
  const m = /^(\^|~|>=|<=|>|<|=)?v?(.*)$/.exec(tok);
  const op = m[1] ?? "";
  const rest = m[2];
  if (rest === "" || rest === "*" || rest === "x" || rest === "X") return op === "<" ? [["<", parseVersion("0.0.0-0")]] : [];
  const core = rest.split(/[-+]/)[0].split(".");
  if (core.length > 3 || core.some((p) => !WILD(p) && !/^\d+$/.test(p)) || WILD(core[0]))
    throw new Error(`not a version range: ${JSON.stringify(tok)}`);
  const firstWild = core.findIndex((p) => WILD(p));
  const wildAt = firstWild >= 0 ? firstWild : core.length < 3 ? core.length : -1;
  const n = core.map((p) => (WILD(p) ? 0 : +p));
  while (n.length < 3) n.push(0);
  const v = wildAt >= 0 ? { major: n[0], minor: n[1], patch: n[2], pre: [] } : parseVersion(rest);
  const bump = (lvl) => ({ major: lvl === 0 ? v.major + 1 : v.major, minor: lvl === 0 ? 0 : lvl === 1 ? v.minor + 1 : v.minor,
    patch: lvl === 2 ? v.patch + 1 : 0, pre: ["0"] });
  if (op === "^") {
    const lvl = v.major !== 0 || wildAt === 1 ? 0 : v.minor !== 0 || wildAt === 2 ? 1 : 2;
    return [[">=", v], ["<", bump(wildAt === 1 && v.major === 0 ? 0 : lvl)]];
  }
  if (op === "~") return [[">=", v], ["<", bump(wildAt === 1 ? 0 : 1)]];
  if (wildAt >= 0) {
    const upper = bump(wildAt - 1);
    if (op === "" || op === "=") return [[">=", v], ["<", upper]];
    if (op === ">") return [[">=", upper]];
    if (op === "<=") return [["<", upper]];
    return [[op, v]];
  }
  return [[op === "" ? "=" : op, v]];
}

function test1(op, v, c) {
  const r = compare(v, c);
  return op === "=" ? r === 0 : op === ">" ? r > 0 : op === ">=" ? r >= 0 : op === "<" ? r < 0 : r <= 0;
}

/** True when version satisfies range, by npm's rules (no includePrerelease). */
export function satisfies(version, range) {
  const v = parseVersion(version);
  return String(range).split("||").some((set) => {
    const toks = set.trim().replace(/(\^|~|>=|<=|>|<|=)\s+/g, "$1").split(/\s+/).filter(Boolean);
    const comps = toks.flatMap(expand);
    if (!comps.every(([op, c]) => test1(op, v, c))) return false;
    if (!v.pre.length) return true;
    return toks.some((t) => {
      if (!t.includes("-")) return false;
      const c = parseVersion(t.replace(/^(\^|~|>=|<=|>|<|=)/, ""));
      return c.major === v.major && c.minor === v.minor && c.patch === v.patch;
    });
  });
}
