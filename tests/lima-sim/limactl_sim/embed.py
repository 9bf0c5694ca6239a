"""Lima's limatmpl (pkg/limatmpl/abs.go and embed.go): a template's
locators made absolute and its `base:` templates embedded, as `limactl
template copy --embed[-all]` and `create` do.  The merge is Lima's
mergeDocuments: the template's settings win, the base's new keys are
appended (nested maps merged key by key), lists get the base's entries
appended (prepended for `base`, `provision` and `probes`), `dns` is taken
from the base only when the template has none, and the higher
`minimumLimaVersion` is kept.  The text of both is kept as written,
comments included; Lima's yq would also reformat it (README.md).  What
Lima would do beyond that (combining mounts, disks and networks that
share a key, embedding `file:` scripts) fails loudly."""

import os

from .errors import Fatal
from .quoting import gq
from . import yamlio, limayaml


SIZE_LIMIT = 4 * 1024 * 1024      # Lima's yBytesLimit
PREPENDED = ('base', 'provision', 'probes')


class Entry(object):
    """One key of a block mapping: its head comments (and blank lines),
    then its key line and the lines of its value."""

    def __init__(self, key, head, body):
        self.key = key
        self.head = head
        self.body = body


def _unsupported(what):
    return Fatal('the limactl simulator cannot embed templates with %s' % what)


def _indent(line):
    return len(line) - len(line.lstrip(' '))


def _blank_or_comment(line):
    st = line.strip()
    return not st or st.startswith('#')


def _key(line):
    """The key of a block mapping's key line, or None."""
    st = line.strip()
    if not st or st[0] in '-?[{&*!|>%@`':
        return None
    if st[0] in '"\'':
        q = st[0]
        i = 1
        while i < len(st):
            if q == '"' and st[i] == '\\':
                i += 2
                continue
            if st[i] == q:
                if q == "'" and st[i + 1:i + 2] == "'":
                    i += 2
                    continue
                break
            i += 1
        if not st[i + 1:].startswith(':'):
            return None
        return str(yamlio.yaml_mod().safe_load(st[:i + 1]))
    i = st.find(': ')
    if i < 0:
        if not st.endswith(':'):
            return None
        i = len(st) - 1
    return st[:i].rstrip()


def _inline(line):
    """The value written on a key line itself ('' when it is a block)."""
    st = line.strip()
    v = st[len(_key_text(line)):].lstrip()[1:].strip()
    return '' if v.startswith('#') else v


def split_map(lines, indent):
    """(entries, foot) of a block mapping whose keys are at column INDENT.
    Comment and blank lines go with the key after them; those after the
    last key (the foot), less the ones indented into its value, stay apart."""
    entries = []
    pending = []
    cur = None
    for line in lines:
        if _blank_or_comment(line):
            pending.append(line)
            continue
        ind = _indent(line)
        st = line.strip()
        if ind == indent and not st.startswith('-'):
            k = _key(line)
            if k is None:
                raise _unsupported('the line %s' % gq(line))
            n = _inner(pending, indent) if cur is not None else 0
            if n:
                cur.body.extend(pending[:n])
            cur = Entry(k, pending[n:], [line])
            entries.append(cur)
            pending = []
            continue
        if cur is None or ind < indent:
            raise _unsupported('the line %s' % gq(line))
        cur.body.extend(pending)
        pending = []
        cur.body.append(line)
    n = _inner(pending, indent) if cur is not None else 0
    if cur is not None:
        cur.body.extend(pending[:n])
    return entries, pending[n:]


def _inner(pending, indent):
    """How many of the comment lines after a value are indented into it
    (a literal block's `#` lines are its text): they stay with it."""
    n = 0
    while n < len(pending) and (not pending[n].strip() or _indent(pending[n]) > indent):
        n += 1
    while n > 0 and not pending[n - 1].strip():
        n -= 1
    return n


def _shift(lines, delta):
    if delta >= 0:
        return [(' ' * delta + ln) if ln.strip() else '' for ln in lines]
    return [ln[min(-delta, _indent(ln)):] if ln.strip() else '' for ln in lines]


# Where the text of a value cannot be kept (a flow collection to merge),
# the value is written anew from its parsed nodes, each scalar as its
# source text, each collection in its flow or block style: a tree of
# ('map', flow, [(key text, key, tree)]), ('seq', flow, [tree]) and
# ('scalar', style, text).

def _tree(node, src):
    y = yamlio.yaml_mod()
    if isinstance(node, y.MappingNode):
        return ('map', bool(node.flow_style),
                [(src[k.start_mark.index:k.end_mark.index], str(k.value), _tree(v, src)) for k, v in node.value])
    if isinstance(node, y.SequenceNode):
        return ('seq', bool(node.flow_style), [_tree(x, src) for x in node.value])
    return ('scalar', node.style, src[node.start_mark.index:node.end_mark.index])


def _entry_tree(e, indent):
    """The tree of entry E's value."""
    y = yamlio.yaml_mod()
    src = '\n'.join(_shift(e.body, -indent)) + '\n'
    root = y.compose(src, Loader=y.SafeLoader)
    return _tree(root.value[0][1], src)


def _str_tree(s):
    y = yamlio.yaml_mod()
    text = y.safe_dump(s, default_flow_style=True, width=1 << 20, allow_unicode=True)
    return ('scalar', None, text.split('\n...')[0].strip())


def _merge_tree(a, b, prepend=False):
    """mergeDocuments on trees: A's settings win, maps merge (in yq, the
    merged map takes the base's style), lists join in A's style."""
    if a[0] == 'map' and b[0] == 'map':
        have = dict((k, i) for i, (_, k, _) in enumerate(a[2]))
        items = list(a[2])
        for kt, k, v in b[2]:
            if k in have:
                i = have[k]
                items[i] = (items[i][0], k, _merge_tree(items[i][2], v))
            else:
                items.append((kt, k, v))
        return ('map', b[1], items)
    if a[0] == 'seq' and b[0] == 'seq':
        return ('seq', a[1], b[2] + a[2] if prepend else a[2] + b[2])
    return a


def _flow(t):
    if t[0] == 'map':
        return '{' + ', '.join('%s: %s' % (kt, _flow(v)) for kt, _, v in t[2]) + '}'
    if t[0] == 'seq':
        return '[' + ', '.join(_flow(v) for v in t[2]) + ']'
    return ' '.join(ln.strip() for ln in t[2].splitlines())


def _scalar_lines(first, t, indent):
    """FIRST followed by scalar T (a block scalar's text re-indented)."""
    lines = t[2].rstrip('\n').split('\n')
    if t[1] not in ('|', '>') or len(lines) == 1:
        return [first + (' ' + _flow(t) if t[2] else '')]
    body = lines[1:]
    cut = min((_indent(ln) for ln in body if ln.strip()), default=0)
    return [first + ' ' + lines[0]] + _shift(_shift(body, -cut), indent + 2)


def _block(first, t, indent):
    """The lines of value T after FIRST (`key:` or `- `) at column INDENT."""
    if t[0] == 'scalar':
        return _scalar_lines(first, t, indent)
    if t[1] or not t[2]:
        return [first + ' ' + _flow(t)]
    if t[0] == 'map':
        out = [first]
        for kt, _, v in t[2]:
            out += _block(' ' * (indent + 2) + kt + ':', v, indent + 2)
        return out
    return [first] + _items(t, indent)


def _items(t, indent):
    out = []
    for v in t[2]:
        if v[0] == 'map' and not v[1] and v[2]:
            sub = _block('', v, indent)[1:]         # keys at indent + 2
            sub[0] = ' ' * indent + '- ' + sub[0].lstrip(' ')
            out += sub
        elif v[0] == 'seq' and not v[1] and v[2]:
            sub = _items(v, indent + 2)
            sub[0] = ' ' * indent + '- ' + sub[0].lstrip(' ')
            out += sub
        else:
            out += _block(' ' * indent + '-', v, indent)
    return out


def _written(key_text, t, indent):
    return _block(' ' * indent + key_text + ':', t, indent)


def _child_indent(body):
    for ln in body[1:]:
        if not _blank_or_comment(ln):
            return _indent(ln)
    return None


def _version_gt(a, b):
    va, vb = limayaml.semver(a)[0], limayaml.semver(b)[0]
    return va is not None and vb is not None and va > vb


def _key_text(line):
    """The key of a key line as written (its quotes kept)."""
    st = line.strip()
    if st[0] in '"\'':
        return st[:1 + st[1:].index(st[0]) + 1]
    return st[:st.index(':')].rstrip()


def _merge_list(e, be, av, bv, indent, prepend):
    a_inline, b_inline = _inline(e.body[0]), _inline(be.body[0])
    if bv == []:
        return e
    if (a_inline and av != []) or b_inline:
        t = _merge_tree(_entry_tree(e, indent), _entry_tree(be, _indent(be.body[0])), prepend)
        return Entry(e.key, e.head, _written(_key_text(e.body[0]), t, indent))
    a_items = e.body[1:]
    a_ind = _child_indent(e.body)
    if a_ind is None:
        a_ind = indent
    b_items = _shift(be.body[1:], a_ind - _child_indent(be.body))
    key_line = e.body[0]
    if a_inline:                        # `key: []` becomes a block list, as with yq
        key_line = key_line[:key_line.index(':', indent) + 1]
    return Entry(e.key, e.head, [key_line] + (b_items + a_items if prepend else a_items + b_items))


def _merge_map(a_entries, b_entries, ad, bd, indent, b_indent, top):
    """The entries of A merged with B's (B's shifted to A's indentation)."""
    out = []
    b_by_key = dict((e.key, e) for e in b_entries)
    for e in a_entries:
        be = b_by_key.get(e.key)
        if be is None or e.key not in ad or e.key not in bd:
            out.append(e)
            continue
        av, bv = ad[e.key], bd[e.key]
        if top and e.key == 'dns' and isinstance(av, list) and av:
            out.append(e)
        elif isinstance(av, dict) and isinstance(bv, dict):
            out.append(_merge_nested(e, be, av, bv, indent))
        elif isinstance(av, list) and isinstance(bv, list):
            out.append(_merge_list(e, be, av, bv, indent, top and e.key in PREPENDED))
        elif top and e.key == 'base' and isinstance(av, list) and isinstance(bv, str):
            t = _entry_tree(e, indent)
            t = ('seq', t[1], [_entry_tree(be, b_indent)] + t[2])
            out.append(Entry(e.key, e.head, _written('base', t, indent)))
        elif top and e.key == 'minimumLimaVersion' and _version_gt(bv, av):
            out.append(Entry(e.key, e.head, _shift(be.body, indent - b_indent)))
        else:
            out.append(e)
    have = set(e.key for e in a_entries)
    new = [e for e in b_entries if e.key not in have]
    return out, [Entry(e.key, _shift(e.head, indent - b_indent), _shift(e.body, indent - b_indent))
                 for e in new]


def _merge_nested(e, be, av, bv, indent):
    if _inline(e.body[0]) or _inline(be.body[0]):
        t = _merge_tree(_entry_tree(e, indent), _entry_tree(be, _indent(be.body[0])))
        return Entry(e.key, e.head, _written(_key_text(e.body[0]), t, indent))
    a_ind, b_ind = _child_indent(e.body), _child_indent(be.body)
    a_entries, a_foot = split_map(e.body[1:], a_ind)
    b_entries, _ = split_map(be.body[1:], b_ind)
    kept, new = _merge_map(a_entries, b_entries, av, bv, a_ind, b_ind, False)
    body = [e.body[0]]
    for x in kept + new:
        body += x.head + x.body
    return Entry(e.key, e.head, body + a_foot)


def _doc(text, what):
    """(the document's lines without a leading `---`, its parsed mapping)."""
    lines = text.splitlines()
    while lines and lines[0].startswith('%'):
        lines.pop(0)
    if lines and lines[0].rstrip() == '---':
        lines.pop(0)
    if any(ln.rstrip() in ('---', '...') for ln in lines):
        raise _unsupported('several YAML documents (%s)' % what)
    return lines, yamlio.parse_yaml('\n'.join(lines), what)


def _render(entries):
    out = []
    for e in entries:
        out += e.head + e.body
    return out


def merge(text, base_text, what):
    """TEXT with BASE_TEXT merged in (Lima's mergeDocuments)."""
    a_lines, ad = _doc(text, what)
    b_lines, bd = _doc(base_text, what)
    a_entries, a_foot = split_map(a_lines, 0)
    b_entries, b_foot = split_map(b_lines, 0)
    kept, new = _merge_map(a_entries, b_entries, ad, bd, 0, 0, True)
    out = _render(kept)
    while out and not out[-1].strip():
        out.pop()
    if new and out and out[-1][:1] == ' ':
        out.append('')               # yq leaves a blank line after a nested last value
    out += _render(new) + b_foot + a_foot
    while out and not out[-1].strip():
        out.pop()
    return '\n'.join(out) + '\n' if out else ''


def _bases(cfg):
    """[(url, digest)] of a template's `base` (a string, a map or a list)."""
    b = cfg.get('base')
    if b is None:
        return []
    items = b if isinstance(b, list) else [b]
    out = []
    for x in items:
        if isinstance(x, dict):
            out.append((str(x.get('url') or ''), x.get('digest')))
        else:
            out.append((str(x), None))
    return out


def _scheme(loc):
    i = loc.find(':')
    s = loc[:i]
    return i > 1 and s[0].isalpha() and all(c.isalnum() or c in '+-.' for c in s)


def base_dir(locator):
    """Lima's basePath: where the relative locators of LOCATOR's template
    are looked up (the working directory for stdin)."""
    if _scheme(locator):
        scheme, _, rest = locator.partition(':')
        return scheme + ':' + os.path.dirname(rest).rstrip('.')
    return os.path.dirname(os.path.abspath(locator))


def abs_locator(loc, base):
    """Lima's absPath."""
    if not loc:
        raise Fatal('locator is empty')
    if _scheme(loc):
        return loc
    if loc.startswith('~'):
        loc = os.path.expanduser(loc)
    if not loc.startswith('/'):
        if '../' in loc:
            raise Fatal("relative locator path %s must not contain '..' path segments" % gq(loc))
        if base.startswith('template:'):
            return 'template:' + os.path.normpath(os.path.join(base[len('template:'):], loc)).lstrip('/')
        loc = os.path.join(base, loc)
    return os.path.normpath(loc)


def _without_first_base(text, cfg, what):
    lines, _ = _doc(text, what)
    entries, foot = split_map(lines, 0)
    out = []
    for e in entries:
        if e.key != 'base':
            out.append(e)
            continue
        b = cfg.get('base')
        if not isinstance(b, list) or len(b) <= 1:
            # The whole key goes, with its comments, but for the document's
            # own head comment when base comes first.
            if not out and e is not entries[-1]:
                entries[entries.index(e) + 1].head[:0] = e.head
            continue
        ind = _child_indent(e.body)
        if _inline(e.body[0]) or ind is None:
            t = _entry_tree(e, 0)
            out.append(Entry(e.key, e.head, _written('base', (t[0], t[1], t[2][1:]), 0)))
            continue
        body = e.body[1:]
        starts = [i for i, ln in enumerate(body) if _indent(ln) == ind and ln.strip().startswith('-')]
        out.append(Entry(e.key, e.head, [e.body[0]] + body[starts[1]:]))
    return '\n'.join(_render(out) + foot) + '\n'


def use_abs_locators(text, locator, what):
    """Lima's UseAbsLocators: relative file locators of `base` made
    absolute (the key is then written anew)."""
    cfg = yamlio.parse_yaml(text, what)
    _no_files(cfg)
    base = base_dir(locator)
    b = cfg.get('base')
    if b is None:
        return text

    changed = []

    def fix(t, loc):
        new = abs_locator(loc, base)
        if new == loc:
            return t
        changed.append(new)
        return _str_tree(new)

    def fix_item(t, x):
        if isinstance(x, dict):
            return ('map', t[1], [(kt, k, fix(v, str(x.get('url') or '')) if k == 'url' else v)
                                  for kt, k, v in t[2]])
        return fix(t, str(x))
    lines, _ = _doc(text, what)
    entries, foot = split_map(lines, 0)
    for i, e in enumerate(entries):
        if e.key == 'base':
            t = _entry_tree(e, 0)
            t = (t[0], t[1], [fix_item(st, x) for st, x in zip(t[2], b)]) if isinstance(b, list) \
                else fix_item(t, b)
            if changed:
                entries[i] = Entry(e.key, e.head, _written(_key_text(e.body[0]), t, 0))
    if not changed:
        return text
    return '\n'.join(_render(entries) + foot) + '\n'


def _no_files(cfg):
    for key in ('provision', 'probes'):
        for p in cfg.get(key) or []:
            if isinstance(p, dict) and p.get('file') is not None:
                raise _unsupported('%s `file:` locators' % key)


def _check_combined(cfg):
    """combineListEntries: Lima folds entries that share a key into one;
    the simulator refuses them rather than guess."""
    for key, field in (('mounts', 'mountPoint'), ('additionalDisks', 'name'), ('networks', 'interface')):
        seen = set()
        for x in cfg.get(key) or []:
            if key == 'additionalDisks' and isinstance(x, str):
                k = x
            elif isinstance(x, dict):
                k = x.get(field) or (x.get('location') if key == 'mounts' else '')
            else:
                continue
            if k and (k == '*' or k in seen):
                raise _unsupported('%s entries that Lima would combine (%s)' % (gq(key), gq(str(k))))
            seen.add(k)


def _embed_bases(text, locator, embed_all, seen):
    what = locator if locator != '-' else 'STDIN'
    base = base_dir(locator)
    while True:
        cfg = yamlio.parse_yaml(text, what)
        _no_files(cfg)
        bases = _bases(cfg)
        if not bases:
            break
        url, digest = bases[0]
        url = abs_locator(url, base)
        if digest is not None:
            raise Fatal('base %s in %s has specified a digest; digest support is not yet implemented'
                        % (gq(url), gq(locator)))
        if url.startswith('template:') and not embed_all:
            for other, _ in bases[1:]:
                if not abs_locator(other, base).startswith('template:'):
                    raise Fatal('cannot embed template %s after not embedding %s'
                                % (gq(abs_locator(other, base)), gq(url)))
            break
        if url in seen:
            raise Fatal('base template loop detected: template %s already included' % gq(url))
        seen.add(url)
        data, _, _, babs = limayaml.read_locator(url)
        btext = _embed_bases(data.decode('utf-8', 'surrogateescape'), babs, embed_all, seen)
        bcfg = yamlio.parse_yaml(btext, url)
        qa = ((cfg.get('vmOpts') or {}).get('qemu') or {}) if isinstance(cfg.get('vmOpts'), dict) else {}
        qb = ((bcfg.get('vmOpts') or {}).get('qemu') or {}) if isinstance(bcfg.get('vmOpts'), dict) else {}
        if isinstance(qa, dict) and isinstance(qb, dict) and qa.get('minimumVersion') and \
                qb.get('minimumVersion') and _version_gt(qb['minimumVersion'], qa['minimumVersion']):
            raise _unsupported('a base that raises `vmOpts.qemu.minimumVersion`')
        text = merge(_without_first_base(text, cfg, what), btext, what)
        if len(text) > SIZE_LIMIT:
            raise Fatal('template %s embedding exceeded the size limit (%d bytes)' % (gq(locator), SIZE_LIMIT))
    return text


def embed(text, locator, embed_all):
    """Lima's Template.Embed (without _config/base.yaml, which the
    simulator does not read): TEXT, read from LOCATOR, with its bases
    merged in; with EMBED_ALL the template: ones too."""
    if not yamlio.yaml_mod():
        raise Fatal('embedding templates needs PyYAML (python3-yaml) in the limactl simulator')
    text = use_abs_locators(text, locator, locator)
    text = _embed_bases(text, locator, embed_all, set())
    _check_combined(yamlio.parse_yaml(text, locator))
    return text
