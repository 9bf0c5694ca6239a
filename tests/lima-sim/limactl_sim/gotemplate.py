"""Go's text/template, as far as Lima's guest templates use it
(pkg/limayaml/defaults.go, executeGuestTemplate): field references such
as {{.User}} and {{.Param.KEY}}, the {{- -}} trim markers and
{{/* comments */}}.  Every other action (if, range, pipelines, functions,
variables, literals) fails loudly with Unsupported instead of being
guessed at.  A text that Go would not parse raises ParseError, and a
reference Go could not evaluate raises ExecError, each with Go's text:
Lima then warns and keeps the text as it is."""

from .errors import Fatal


class ParseError(Exception):
    """template.Parse failed (Lima keeps the text and warns)."""


class ExecError(Exception):
    """template.Execute failed (Lima keeps the text and warns)."""


class Unsupported(Fatal):
    """An action the simulator does not implement."""


_SPACE = ' \t\r\n'
_IDENT_START = frozenset('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_')
_IDENT = _IDENT_START | frozenset('0123456789')
NO_VALUE = '<no value>'


class _Str(str):
    """A string that came from map[string]string (Go names its type)."""


def _line(text, pos):
    return 1 + text.count('\n', 0, pos)


def _after_quoted(text, i, end):
    """The index after the string or rune that starts at I (a backslash
    escapes in "…" and '…', not in a raw `…`)."""
    q = text[i]
    j = i + 1
    while j < end and text[j] != q:
        j += 2 if q != '`' and text[j] == '\\' else 1
    return j + 1


def _action_end(text, i):
    """Index of the `}}` that closes the action whose body starts at I,
    skipping quoted strings and runes; -1 when the text ends first."""
    n = len(text)
    while i < n:
        if text[i] in '"\'`':
            i = _after_quoted(text, i, n)
            continue
        if text.startswith('}}', i):
            return i
        i += 1
    return -1


# What may start a token inside a Go template action (text/template/parse,
# lexInsideAction); any other character is a parse error there.
_TOKEN_START = _IDENT_START | frozenset('0123456789 \t\r\n.=:|"`\'$+-(),')


def _go_rune(c):
    return "U+%04X '%s'" % (ord(c), c)


def _lex_errors(text, k, end):
    """The parse error Go's lexer reports inside the action TEXT[K:END], or
    None.  Only the errors of the tokens Lima's templates could plausibly
    contain are found: a bad character and a malformed number."""
    i = k
    while i < end:
        c = text[i]
        if c in '"\'`':
            i = _after_quoted(text, i, end)
            continue
        if c not in _TOKEN_START:
            return 'template: :%d: bad character %s' % (_line(text, i), _go_rune(c))
        if c in '+-0123456789' or (c == '.' and i + 1 < end and text[i + 1].isdigit()):
            j = i + 1 if c in '+-' else i
            while j < end and text[j] in '0123456789_xXoObB.eEpPabcdefABCDEF':
                j += 1
            if j < end and (text[j] in _IDENT or text[j] == '.'):
                return 'template: :%d: bad number syntax: %s' % (_line(text, i), '"%s"' % text[i:j + 1])
            i = j
            continue
        if c == '.' or c in _IDENT_START:
            i += 1
            while i < end and text[i] in _IDENT:
                i += 1
            continue
        i += 1
    return None


def _fields(body):
    """['User'] for `.User`, ['Param', 'KEY'] for `.Param.KEY`, else None."""
    if not body.startswith('.') or body == '.':
        return None
    out = []
    for part in body[1:].split('.'):
        if not part or part[0] not in _IDENT_START or any(c not in _IDENT for c in part):
            return None
        out.append(part)
    return out


def parse(text):
    """The template as a list of literal strings and (fields, pos) actions,
    where POS is the offset of the chain's second field (Go's position of
    a field chain in its error messages)."""
    nodes = []
    lit_start = i = 0
    n = len(text)
    trim_next = False
    while True:
        j = text.find('{{', i)
        if j < 0:
            lit = text[lit_start:]
            nodes.append(lit.lstrip(_SPACE) if trim_next else lit)
            return nodes
        lit = text[lit_start:j]
        if trim_next:
            lit = lit.lstrip(_SPACE)
        k = j + 2
        if text.startswith('-', k) and k + 1 < n and text[k + 1] in _SPACE:
            lit = lit.rstrip(_SPACE)
            k += 2
        nodes.append(lit)
        if text.startswith('/*', k):
            end = text.find('*/', k + 2)
            if end < 0:
                raise ParseError('template: :%d: unclosed comment' % _line(text, j))
            close = end + 2
            trim_next = text.startswith(' -}}', close)
            if trim_next:
                close += 2
            if not text.startswith('}}', close):
                raise ParseError('template: :%d: comment ends before closing delimiter' % _line(text, j))
            lit_start = i = close + 2
            continue
        end = _action_end(text, k)
        bad = _lex_errors(text, k, n if end < 0 else end)
        if bad:
            raise ParseError(bad)
        if end < 0:
            start, last = _line(text, j), _line(text, n)
            raise ParseError('template: :%d: unclosed action%s'
                             % (last, '' if start == last else ' started at :%d' % start))
        body = text[k:end]
        trim_next = body.endswith(' -') or (len(body) >= 2 and body[-1] == '-' and body[-2] in _SPACE)
        if trim_next:
            body = body[:-1]
        body = body.strip(_SPACE)
        if not body:
            raise ParseError('template: :%d: missing value for command' % _line(text, j))
        fields = _fields(body)
        if fields is None:
            raise Unsupported('the limactl simulator implements only field references such as '
                              '{{.User}} and {{.Param.KEY}} in Go templates, not %s'
                              % text[j:end + 2])
        second = k + (len(text[k:end]) - len(text[k:end].lstrip(_SPACE))) + 1 + len(fields[0])
        nodes.append((fields, second))
        lit_start = i = end + 2


def _go_type(v):
    return 'string' if isinstance(v, _Str) else 'interface {}'


def _show(v):
    """Go's fmt %v of the values a guest template can reach."""
    if v is None:
        return NO_VALUE
    if isinstance(v, dict):
        return 'map[' + ' '.join('%s:%s' % (k, _show(v[k])) for k in sorted(v)) + ']'
    return str(v)


def execute(text, data):
    """Expand TEXT with DATA (a dict, like Lima's map[string]any)."""
    out = []
    for node in parse(text):
        if isinstance(node, str):
            out.append(node)
            continue
        fields, pos = node
        v = data
        for f in fields:
            if v is None:
                break           # a missing map entry: Go's invalid value
            if not isinstance(v, dict):
                line_start = text.rfind('\n', 0, pos) + 1
                raise ExecError('template: :%d:%d: executing "" at <.%s>: can\'t evaluate field %s in type %s'
                                % (_line(text, pos), pos - line_start, '.'.join(fields), f, _go_type(v)))
            v = v.get(f)
        out.append(_show(v))
    return ''.join(out)


def guest_data(name, hostname, uid, user, home):
    """The data of Lima's executeGuestTemplate, without lima.yaml's param."""
    return {'Name': name, 'Hostname': hostname, 'UID': uid, 'User': user, 'Home': home, 'Param': {}}


def with_param(data, param):
    """DATA with PARAM (lima.yaml's `param`, a map[string]string in Lima)."""
    p = {}
    for k, v in (param.items() if isinstance(param, dict) else ()):
        if isinstance(v, bool):
            v = 'true' if v else 'false'
        p[str(k)] = _Str('' if v is None else v)
    return dict(data, Param=p)
