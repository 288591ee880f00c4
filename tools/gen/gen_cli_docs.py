#!/usr/bin/env python3
"""Man pages and bash completion for ringshard, generated from its tables.

The command prints what its --help is made of as TSV, from the same tables
that print --help (src/util/opt.h): `ringshard --dump-help` (the program's
summary, usage, commands and exit codes; then each command's usage lines,
description, section titles, option and operand lines with their help,
and prose), and `ringshard --dump-options` (every option row: its kind,
range, values, repeat rule). No --help text is read back. One source per
page: those dumps, plus the page's file man/ringshard.h2m or
man/ringshard-COMMAND.h2m for what --help does not say (examples, files,
see-also). The build runs this script on the binary it made, so the pages
and the completion list exactly the commands and options the binary has,
and cannot drift from them. A command without its man/ file fails the
build, saying so.

The pages are written here, in man(7) roff, in the order of man-pages(7):
  NAME         the command and its summary (the "command" lines);
  SYNOPSIS     the command's "usage" lines;
  DESCRIPTION  its "description", then the man/ file's [DESCRIPTION];
  COMMANDS     (ringshard(1) only) the "command" lines;
  OPTIONS      every "item" (option or operand) with its help, under its
               "section" title (the title's note as a sentence), the
               "text" paragraphs between them where --help has them;
  EXIT STATUS  the man/ file's [EXIT STATUS], then the "exit" lines;
  ENVIRONMENT, FILES, EXAMPLES, SEE ALSO and any other section: the man/
               file's; FILES, when the file has none, is the bucket
               directory's layout. EXAMPLES and SEE ALSO are required.
A man/ file keeps help2man's include syntax: a line `[SECTION]`, then roff
(write `\\-` for a `-` in an option). `docs/NAME.md` anywhere in a page
becomes the installed path of that reference page (--doc-dir), and must
exist in the source tree's docs/.

The completion is written from the same dumps, by these rules:
  - commands: the "command" lines;
  - options: every row's --long and -x of the command (--dump-options);
  - an option's argument: an enum's values (`quarantine=FILE` gives
    `quarantine=`, then a file); a placeholder FILE or LIST completes files,
    DIR and BUCKETDIR directories; any other placeholder (N, SIZE)
    completes nothing;
  - operands: INPUT in a usage line completes files, else DIR
    directories, else nothing.
Usage: tools/gen/gen_cli_docs.py --binary BIN --includes man/ --man-dir OUT
         --completion OUT_FILE --version V --doc-dir DOCDIR [--docs docs/]
"""
import argparse
import os
import re
import subprocess
import sys
import time

FILE_ARGS = {'FILE', 'LIST'}
DIR_ARGS = {'DIR', 'BUCKETDIR'}


def run_dump(binary, args):
    return subprocess.run([binary] + args, check=True, capture_output=True, text=True).stdout


def unescape(field):
    """A field of --dump-help: \\n a newline, \\\\ a backslash."""
    return re.sub(r'\\(.)', lambda m: '\n' if m.group(1) == 'n' else m.group(1), field)


def read_layout(dump):
    """{name: {'usage': [lines], 'description': [lines], 'blocks': [...],
    'command': [(name, summary)], 'exit': [(code, meaning)], 'summary': text}}
    from `ringshard --dump-help`: name is a command, or "ringshard" for the
    program. blocks, in --help order: ('heading', title, note or None),
    ('item', synopsis, [help lines]), ('para', [lines])."""
    out = {}
    for line in dump.splitlines():
        f = line.split('\t')
        name, kind, rest = f[0], f[1], [unescape(x) for x in f[2:]]
        d = out.setdefault(name, {'usage': [], 'description': [], 'blocks': [], 'command': [], 'exit': [],
                                  'summary': ''})
        if kind == 'usage':
            d['usage'].append(rest[0])
        elif kind == 'description':
            d['description'] = rest[0].split('\n')
        elif kind == 'section':
            d['blocks'].append(('heading', rest[0], None if rest[1] == '-' else rest[1].replace('\n', ' ')))
        elif kind == 'item':
            d['blocks'].append(('item', rest[0], [l.strip() for l in rest[2].split('\n')] if rest[2] else []))
        elif kind == 'text':
            d['blocks'].append(('para', rest[0].split('\n')))
        elif kind == 'command':
            d['command'].append((rest[0], rest[1]))
        elif kind == 'exit':
            d['exit'].append((rest[0], rest[1]))
        elif kind == 'summary':
            d['summary'] = rest[0]
        else:
            sys.exit('gen_cli_docs: ringshard --dump-help: unknown line kind %r' % kind)
    if not out.get('ringshard', {}).get('command'):
        sys.exit('gen_cli_docs: no commands in ringshard --dump-help')
    if not out['ringshard']['exit']:
        sys.exit('gen_cli_docs: no exit codes in ringshard --dump-help')
    return out


def options_from_dump(dump, cmd):
    """{option: {'arg': token or None, 'desc': text}} of cmd from the rows
    `ringshard --dump-options` prints (src/util/opt.h, rs_opt_dump): command,
    long, short, placeholder, kind, min, max, values, repeat, checked, help. An enum's
    values replace its placeholder (--hash NAME completes the hashes)."""
    opts = {}
    for line in dump.splitlines():
        f = line.split('\t')
        if len(f) != 11 or f[0] != cmd:
            continue
        _, long_name, short, arg, kind, _, _, values, _, _, desc = f
        arg = None if arg == '-' else arg
        if kind == 'enum' and values != '-':
            arg = values
        for n in [long_name] + ([short] if short != '-' else []):
            if n not in opts:
                opts[n] = {'arg': arg, 'desc': unescape(desc).replace('\n', ' ')}
    return opts


def values_of(arg, desc):
    """(kind, values): kind 'words', 'file', 'dir' or 'none'."""
    if arg is None:
        return 'none', []
    if '|' in arg:
        vals = []
        for v in arg.split('|'):
            m = re.match(r'^([a-z0-9_-]+=)[A-Z]+$', v)
            vals.append(m.group(1) if m else v)
        return 'words', vals
    if arg in FILE_ARGS:
        return 'file', []
    if arg in DIR_ARGS:
        return 'dir', []
    if re.fullmatch(r'[A-Z]+', arg):
        plain = re.sub(r'\([^)]*\)', '', desc)
        head = re.split(r'[;:]|\.\s', plain)[0]
        items = [x.strip() for x in head.split(',')]
        if len(items) >= 2 and all(re.fullmatch(r'[a-z0-9_-]+', x) for x in items):
            return 'words', items
    return 'none', []


def operands_of(usage_lines):
    usage = ' '.join(usage_lines)
    if 'INPUT' in usage:
        return 'file'
    if re.search(r'\bDIR\b', usage.split('-o DIR')[-1] if '-o DIR' in usage else usage):
        return 'dir'
    return 'none'


def shell_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def completion_script(version, cmds, per_cmd):
    out = [
        '# bash completion for ringshard                              -*- shell-script -*-',
        '# Generated by tools/gen/gen_cli_docs.py from the option tables of ringshard %s' % version,
        '# (--dump-options, --dump-help): do not edit; change the tables (src/cli/) or the generator.',
        '',
        '# _ringshard_arg CMD OPT: how OPT takes its argument in CMD: "words V..." for',
        '# fixed values, file, dir, any (a value to type), or nothing for a flag.',
        '_ringshard_arg()',
        '{',
        '    case "$1 $2" in',
    ]
    for c, _ in cmds:
        for name, o in per_cmd[c]['opts'].items():
            kind, vals = values_of(o['arg'], o['desc'])
            if o['arg'] is None:
                continue
            what = {'words': 'words ' + ' '.join(vals), 'file': 'file', 'dir': 'dir', 'none': 'any'}[kind]
            out.append('        %s) echo %s ;;' % (shell_quote(c + ' ' + name), shell_quote(what)))
    out += ['    esac', '}', '']
    out.append('_ringshard_commands=%s' % shell_quote(' '.join(c for c, _ in cmds)))
    out += ['', '# _ringshard_options CMD: its options, as --help lists them', '_ringshard_options()',
            '{', '    case "$1" in']
    for c, _ in cmds:
        out.append('        %s) echo %s ;;' % (c, shell_quote(' '.join(per_cmd[c]['opts']))))
    out += ['    esac', '}', '', '# _ringshard_operands CMD: file, dir or none', '_ringshard_operands()',
            '{', '    case "$1" in']
    for c, _ in cmds:
        out.append('        %s) echo %s ;;' % (c, per_cmd[c]['operands']))
    out += ['    esac', '}', '']
    out.append(r'''_ringshard_files()
{
    compopt -o filenames 2>/dev/null
    if [ "$1" = dir ]; then
        mapfile -t COMPREPLY < <(compgen -d -- "$2")
    else
        mapfile -t COMPREPLY < <(compgen -f -- "$2")
    fi
}

# Completes `ringshard [COMMAND] [OPTION [VALUE]]...`. Options are read as
# words, "--opt=value" too: bash splits "--opt=va" into "--opt", "=", "va"
# (COMP_WORDBREAKS holds '='), and bash-completion's helpers keep it whole;
# both are handled.
_ringshard()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev= cmd= i w opt value
    COMPREPLY=()
    [ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD-1]}
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        case "$w" in
            -*) ;;
            *) if [ -z "$cmd" ] && [[ " $_ringshard_commands " == *" $w "* ]]; then cmd=$w; fi ;;
        esac
        [ -n "$cmd" ] && break
    done
    if [ -z "$cmd" ]; then
        mapfile -t COMPREPLY < <(compgen -W "$_ringshard_commands --help --version" -- "$cur")
        return 0
    fi
    # the option whose value is being typed, and the value so far
    opt= value=$cur
    if [ "$cur" = "=" ]; then
        opt=$prev value=
    elif [ "$prev" = "=" ] && [ "$COMP_CWORD" -ge 2 ]; then
        opt=${COMP_WORDS[COMP_CWORD-2]}
    elif [[ "$cur" == --*=* ]]; then
        opt=${cur%%=*} value=${cur#*=}
    elif [[ "$prev" == -* ]]; then
        opt=$prev
    fi
    # quarantine=FILE and the like: a file after "word="
    if [ "$prev" = "=" ] && [ "$COMP_CWORD" -ge 3 ] && [[ "${COMP_WORDS[COMP_CWORD-3]}" == -* ]]; then
        _ringshard_files file "$cur"
        return 0
    fi
    if [[ "$value" == *=* ]] && [[ "$opt" == -* ]]; then
        _ringshard_files file "${value#*=}"
        return 0
    fi
    if [ -n "$opt" ]; then
        local how
        how=$(_ringshard_arg "$cmd" "$opt")
        case "$how" in
            words\ *)
                mapfile -t COMPREPLY < <(compgen -W "${how#words }" -- "$value")
                [[ "${COMPREPLY[0]}" == *= ]] && compopt -o nospace 2>/dev/null
                return 0 ;;
            file|dir) _ringshard_files "$how" "$value"; return 0 ;;
            any) return 0 ;;
        esac
    fi
    if [[ "$cur" == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$(_ringshard_options "$cmd")" -- "$cur")
        return 0
    fi
    case "$(_ringshard_operands "$cmd")" in
        file) _ringshard_files file "$cur" ;;
        dir) _ringshard_files dir "$cur" ;;
    esac
    return 0
}
complete -F _ringshard ringshard
''')
    return '\n'.join(out)


def page_date():
    """The pages' date: SOURCE_DATE_EPOCH, else the source tree's last commit, else today."""
    epoch = os.environ.get('SOURCE_DATE_EPOCH')
    if not epoch:
        try:
            here = os.path.dirname(os.path.abspath(__file__))
            epoch = subprocess.run(['git', '-C', here, 'log', '-1', '--format=%ct'], capture_output=True,
                                   text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            epoch = ''
    return int(epoch) if epoch.isdigit() else int(time.time())


# ---- man pages ---------------------------------------------------------

# man-pages(7)'s order; a section a man/ file adds that is not here goes
# before SEE ALSO
SECTION_ORDER = ['NAME', 'SYNOPSIS', 'DESCRIPTION', 'COMMANDS', 'OPTIONS', 'EXIT STATUS', 'ENVIRONMENT',
                 'FILES', 'NOTES', 'BUGS', 'EXAMPLES', 'SEE ALSO']
REQUIRED_IN_FILE = ['EXAMPLES', 'SEE ALSO']

DEFAULT_FILES = r'''.TP
.I DIR/manifest.json
a bucket directory's manifest: the ring, the key, the dialect, every
file with its rows, bytes and checksums (docs/format-manifest.md)
.TP
.I DIR/<node>.csv.gz
the rows of one node (\fI.csv.zst\fR with zstd, \fI.csv\fR plain), a
header line first; a node's name with bytes other than [a\-z0\-9\-] (and
_ inside it) as %XX (docs/format-layout.md)
.TP
.I DIR/g<N>/manifest.json\fR, \fPDIR/g<N>/<node>.csv.gz
generation N, added by an append: its manifest names the one before it;
a node's rows are its base file's, then its files in the generations'
order (docs/format-generations.md)
.TP
.I DIR/<node>.keyidx\fR, \fPDIR/g<N>/<node>.keyidx
key indexes beside the data files of a directory grown by
\fBdedup \-\-append\fR (docs/format-keyidx.md)
'''


def roff_text(s):
    """Plain text as roff: backslashes and hyphens escaped."""
    return s.replace('\\', '\\e').replace('-', '\\-')


def roff_lines(lines):
    """Lines of prose as roff input lines (none may start with . or ')."""
    out = []
    for l in lines:
        t = roff_text(l.strip())
        if t.startswith('.') or t.startswith("'"):
            t = '\\&' + t
        if t:
            out.append(t)
    return out


def option_tag(syn):
    """The synopsis of an option line in bold (names) and italics (placeholders)."""
    out = []
    for tok in syn.split():
        bare, comma = (tok[:-1], ',') if tok.endswith(',') and len(tok) > 1 else (tok, '')
        if re.fullmatch(r'--?[A-Za-z0-9][A-Za-z0-9-]*', bare):
            out.append('\\fB%s\\fR%s' % (roff_text(bare), comma))
        elif re.fullmatch(r'[A-Z][A-Z0-9_]*(\.\.\.)?|[A-Z]+\[[^]]*\]', bare):
            out.append('\\fI%s\\fR%s' % (roff_text(bare), comma))
        else:
            out.append(roff_text(tok))
    return ' '.join(out)


def roff_prose(lines):
    """Prose lines of --help, an indented line kept as it is (a layout)."""
    out = []
    for l in lines:
        if l.startswith('  '):
            out += ['.RS', '.nf'] + roff_lines([l]) + ['.fi', '.RE']
        else:
            out += roff_lines([l])
    return out


def roff_synopsis(usage):
    out = []
    for k, u in enumerate(usage):
        m = re.match(r'^(ringshard(?: [a-z][a-z0-9-]*)?)(.*)$', u)
        head, rest = (m.group(1), m.group(2)) if m else (u, '')
        if k:
            out.append('.br')
        out.append('\\fB%s\\fR%s' % (roff_text(head), roff_text(re.sub(r'\s{2,}', '  ', rest))))
    return out


def roff_options(blocks):
    out = []
    for b in blocks:
        if b[0] == 'heading':
            if b[1] != 'Options' or b[2]:  # a plain "Options:" is the section's own title
                out.append('.SS "%s"' % roff_text(b[1]))
            if b[2]:
                note = b[2][0].upper() + b[2][1:]
                out += roff_lines([note + ('' if note.endswith('.') else '.')])
        elif b[0] == 'item':
            if not b[2]:
                sys.exit('gen_cli_docs: the option line "%s" has no help' % b[1])
            out += ['.TP', option_tag(b[1])] + roff_lines(b[2])
        else:
            out += ['.PP'] + roff_prose(b[1])
    return out


def read_include(path):
    """{SECTION: roff text} of a man/ file: `[SECTION]` lines, then roff."""
    secs, cur = {}, None
    for line in open(path, encoding='utf-8').read().splitlines():
        m = re.fullmatch(r'\[([A-Z][A-Z ]*)\]\s*', line)
        if m:
            cur = m.group(1)
            secs.setdefault(cur, [])
        elif cur is not None:
            secs[cur].append(line)
    missing = [s for s in REQUIRED_IN_FILE if not any(l.strip() for l in secs.get(s, []))]
    if missing:
        sys.exit('gen_cli_docs: %s: no %s section (man/README.md says what a page needs)' %
                 (path, ', '.join('[%s]' % s for s in missing)))
    return {k: '\n'.join(v).strip('\n') for k, v in secs.items()}


def roff_path(path):
    """A path as roff, with a break point after each / (\\:, no hyphen): a long
    install prefix still fits a narrow page. man/install.cmake writes the
    install prefix's doc directory the same way."""
    return roff_text(path).replace('/', '/\\:')


def installed_docs(text, docs_src, doc_dir, where):
    """text with every docs/NAME.md as the installed path DOC_DIR/NAME.md."""
    def one(m):
        name = m.group(1)
        if not os.path.exists(os.path.join(docs_src, name)):
            sys.exit('gen_cli_docs: %s names docs/%s, which is not in %s' % (where, name, docs_src))
        return roff_path(doc_dir + '/') + roff_text(name)
    text = re.sub(r"\s+in\s+ringshard's\s+source\s+tree", '', text)
    text = re.sub(r'docs/([A-Za-z0-9_.-]+\.md)', one, text)
    return re.sub(r'(?<![A-Za-z0-9_./-])docs/(?![A-Za-z0-9_*])', lambda m: roff_path(doc_dir + '/'), text)


def write_page(out_path, name, summary, version, epoch, sections, docs_src, doc_dir):
    """The page: .TH, then sections {NAME: [roff lines]} in SECTION_ORDER."""
    iso = time.strftime('%Y-%m-%d', time.gmtime(epoch))
    out = ['.\\" Generated by tools/gen/gen_cli_docs.py from the tables of `%s --help` and man/%s.h2m: do not edit.' %
           (name.replace('-', ' '), name),
           '.TH %s 1 %s "ringshard %s" "User Commands"' % (name.upper(), iso, version),
           '.nh',  # no hyphenation: options and paths are copied from pages
           '.ad l',  # ragged right: a long path cannot stretch a justified line
           '.SH NAME', '%s \\- %s' % (roff_text(name), roff_text(summary))]
    order = [s for s in SECTION_ORDER if s in sections and s != 'SEE ALSO'] + \
            [s for s in sections if s not in SECTION_ORDER] + ['SEE ALSO']
    for s in order:
        body = sections[s]
        if not any(l.strip() for l in body):
            continue
        out.append('.SH %s' % (('"%s"' % s) if ' ' in s else s))
        for l in body:
            # no paragraph macro right after a heading or another one
            if l in ('.PP', '.P', '.LP') and out[-1].startswith(('.SH', '.SS', '.PP')):
                continue
            out.append(l)
    text = installed_docs('\n'.join(out) + '\n', docs_src, doc_dir, out_path)
    tmp = out_path + '.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
        f.write(text)
    os.replace(tmp, out_path)


# what a man/ file copied from another may say, which the table says better
EXIT_BOILERPLATE = re.compile(r'^0 on success; the other codes are listed in\s*\n\.BR ringshard \(1\)\.\s*$')


def exit_status(inc, codes):
    own = inc.get('EXIT STATUS', '')
    body = [] if EXIT_BOILERPLATE.match(own) else own.splitlines()
    if body:
        body.append('.PP')
    body += ['ringshard exits with one of these codes:']
    for code, meaning in codes:
        body += ['.TP', code] + roff_lines([meaning])
    return body


def command_page(c, layout, inc, codes):
    """The sections of ringshard-C(1)."""
    secs = {'SYNOPSIS': roff_synopsis(layout['usage']),
            'DESCRIPTION': roff_prose(layout['description']),
            'OPTIONS': roff_options(layout['blocks']),
            'EXIT STATUS': exit_status(inc, codes),
            'FILES': (inc.get('FILES') or DEFAULT_FILES).splitlines()}
    if inc.get('DESCRIPTION'):
        secs['DESCRIPTION'] += ['.PP'] + inc['DESCRIPTION'].splitlines()
    if inc.get('OPTIONS'):
        secs['OPTIONS'] += ['.PP'] + inc['OPTIONS'].splitlines()
    for s, body in inc.items():
        if s not in secs:
            secs[s] = body.splitlines()
    see = secs['SEE ALSO']
    if 'ringshard (1)' not in '\n'.join(see):
        secs['SEE ALSO'] = ['.BR ringshard (1),'] + see
    return secs


# the program's own options (its --help names them in prose)
MAIN_OPTIONS = [('item', '-h, --help', ['print the commands and the exit codes']),
                ('item', '--version', ['print the version'])]


def main_page(layout, inc, codes):
    """The sections of ringshard(1): its commands, each with its page."""
    cmd_lines = []
    for c, summary in layout['command']:
        cmd_lines += ['.TP', '\\fB%s\\fR' % roff_text(c)] + roff_lines([summary])
        cmd_lines.append('(\\fBringshard\\-%s\\fR(1))' % roff_text(c))
    secs = {'SYNOPSIS': roff_synopsis(layout['usage']),
            'DESCRIPTION': inc.get('DESCRIPTION', '').splitlines(),
            'COMMANDS': ['Each command has its page, and prints its options with',
                         '\\fBringshard\\fR \\fIcommand\\fR \\fB\\-\\-help\\fR.'] + cmd_lines,
            'OPTIONS': roff_options(MAIN_OPTIONS),
            'EXIT STATUS': exit_status(inc, codes),
            'FILES': (DEFAULT_FILES + '.TP\n.I docs/\nthe reference pages (Markdown)\n' +
                      inc.get('FILES', '')).splitlines()}
    for s, body in inc.items():
        if s not in secs:
            secs[s] = body.splitlines()
    # every command's page in SEE ALSO, those the file does not name added
    see = secs['SEE ALSO']
    named = '\n'.join(see)
    extra = ['.BR ringshard\\-%s (1),' % c for c, _ in layout['command']
             if 'ringshard-%s (1)' % c not in named and 'ringshard\\-%s (1)' % c not in named]
    secs['SEE ALSO'] = extra + see
    return secs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--binary', required=True)
    ap.add_argument('--includes', required=True)
    ap.add_argument('--man-dir', required=True)
    ap.add_argument('--completion', required=True)
    ap.add_argument('--version', required=True)
    ap.add_argument('--doc-dir', required=True, help='where the reference docs/*.md are installed')
    ap.add_argument('--docs', help="the source tree's docs/ (default: beside --includes)")
    a = ap.parse_args()
    binary = os.path.abspath(a.binary)
    docs_src = a.docs or os.path.join(os.path.dirname(os.path.abspath(a.includes.rstrip('/'))), 'docs')
    layout = read_layout(run_dump(binary, ['--dump-help']))
    prog = layout['ringshard']
    cmds, codes = prog['command'], prog['exit']
    dump = run_dump(binary, ['--dump-options'])
    per_cmd = {}
    for c, _ in cmds:
        if c not in layout:
            sys.exit('gen_cli_docs: ringshard --dump-help has nothing of %s' % c)
        per_cmd[c] = {'opts': options_from_dump(dump, c), 'operands': operands_of(layout[c]['usage'])}
        if not per_cmd[c]['opts']:
            sys.exit('gen_cli_docs: no options of %s in ringshard --dump-options' % c)
    missing = [n for n in ['ringshard'] + ['ringshard-' + c for c, _ in cmds]
               if not os.path.exists(os.path.join(a.includes, n + '.h2m'))]
    if missing:
        sys.exit('gen_cli_docs: %s: missing; every command needs its page file (man/README.md)' %
                 ', '.join(os.path.join(a.includes, n + '.h2m') for n in missing))
    os.makedirs(a.man_dir, exist_ok=True)
    epoch = page_date()
    inc = read_include(os.path.join(a.includes, 'ringshard.h2m'))
    write_page(os.path.join(a.man_dir, 'ringshard.1'), 'ringshard', prog['summary'],
               a.version, epoch, main_page(prog, inc, codes), docs_src, a.doc_dir)
    for c, summary in cmds:
        inc = read_include(os.path.join(a.includes, 'ringshard-%s.h2m' % c))
        write_page(os.path.join(a.man_dir, 'ringshard-%s.1' % c), 'ringshard-' + c, summary, a.version, epoch,
                   command_page(c, layout[c], inc, codes), docs_src, a.doc_dir)
    os.makedirs(os.path.dirname(os.path.abspath(a.completion)), exist_ok=True)
    with open(a.completion, 'w') as f:
        f.write(completion_script(a.version, cmds, per_cmd))


if __name__ == '__main__':
    main()
