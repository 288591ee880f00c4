#!/usr/bin/env python3
"""Man pages and bash completion for ringshard, generated from its --help.

One source: the text `ringshard --help` and `ringshard COMMAND --help`
print. The build runs this script on the binary it made, so the pages and
the completion list exactly the commands and options the binary has, and
cannot drift from them. What --help does not say (examples, a longer
description, see-also) comes from man/ringshard.h2m and
man/ringshard-COMMAND.h2m, help2man include files; every command needs
one (a new command without it fails the build, saying so).

The man pages are help2man's (Debian package help2man). The completion is
written here from the same parse of the help, by these rules:
  - commands: the lines under "Commands:" of `ringshard --help`;
  - options: on a help line that starts (after blanks) with -x or --opt,
    every --opt and -x of its synopsis (the tokens before the first plain
    lowercase word: `--header / --no-header`, `-o, --output DIR`);
  - an option's argument: the token after it. A list `a|b|c` gives fixed
    values (`quarantine=FILE` gives `quarantine=`, then a file); an
    upper-case placeholder whose description starts with a comma-separated
    list of two or more names (`--scheme NAME  ring (default), ketama, ...`)
    gives those names; FILE and LIST complete files, DIR and BUCKETDIR
    directories; any other placeholder (N, SIZE) completes nothing;
  - operands: INPUT in the usage line completes files, else DIR
    directories, else nothing.
Usage: tools/gen_cli_docs.py --binary BIN --includes man/ --man-dir OUT
         --completion OUT_FILE --version V
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

OPT_LINE = re.compile(r'^\s{1,8}(-[A-Za-z0-9],\s+)?--?[a-z][a-z0-9-]*')
FILE_ARGS = {'FILE', 'LIST'}
DIR_ARGS = {'DIR', 'BUCKETDIR'}


def run_help(binary, args):
    out = subprocess.run([binary] + args, check=True, capture_output=True, text=True).stdout
    return out


def commands_of(main_help):
    """[(name, summary)] from the Commands: block of `ringshard --help`."""
    cmds, on = [], False
    for line in main_help.splitlines():
        if line.strip() == 'Commands:':
            on = True
            continue
        if on:
            m = re.match(r'^  ([a-z][a-z0-9-]*)\s+(.*)$', line)
            if not m:
                break
            cmds.append((m.group(1), m.group(2).strip()))
    if not cmds:
        sys.exit('gen_cli_docs: no "Commands:" list in ringshard --help')
    return cmds


def is_value_token(tok):
    """An argument placeholder or value list, as opposed to a description word."""
    return bool(re.search(r'[A-Z|=\[,.]', tok)) or tok == '/'


def parse_options(help_text):
    """{option: {'arg': token or None, 'desc': text}} in help order."""
    opts = {}
    lines = help_text.splitlines()
    for i, line in enumerate(lines):
        if not OPT_LINE.match(line):
            continue
        # the synopsis ends at the first gap of two blanks (or, in
        # "--header / --no-header the first...", at the first plain word)
        body = line.strip()
        gap = re.search(r'\s{2,}', body)
        syn, rest = (body[:gap.start()], body[gap.end():]) if gap else (body, '')
        toks = syn.split()
        names, arg, k = [], None, 0
        while k < len(toks):
            t = toks[k].rstrip(',')
            if re.fullmatch(r'--?[a-zA-Z0-9][a-z0-9-]*', t):
                names.append(t)
                arg = None
            elif t == '/':
                pass
            elif names and arg is None and is_value_token(t):
                arg = t
            else:
                break
            k += 1
        desc = ' '.join(toks[k:] + rest.split())
        # the description goes on over the lines indented deeper that follow
        for nxt in lines[i + 1:]:
            if not nxt.strip() or OPT_LINE.match(nxt) or not nxt.startswith('      '):
                break
            desc += ' ' + nxt.strip()
        for n in names:
            if n not in opts:
                opts[n] = {'arg': arg, 'desc': desc}
            elif arg and '|' in arg and opts[n]['arg'] and '|' in opts[n]['arg']:
                # one name, two meanings (plan's --order: the waves' and the
                # ring's): both value lists
                opts[n]['arg'] += '|' + arg
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


def operands_of(help_text):
    usage = ' '.join(l for l in help_text.splitlines()[:3] if 'ringshard' in l)
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
        '# Generated by tools/gen_cli_docs.py from the --help of ringshard %s:' % version,
        '# do not edit; change the help text (or the generator) instead.',
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


def man_page(binary, cmd, summary, include, version, epoch, out_path, wrapdir):
    """help2man of `ringshard CMD --help` (cmd None: `ringshard --help`) into out_path."""
    name = 'ringshard' if cmd is None else 'ringshard-' + cmd
    # help2man names the page after the program it runs: a wrapper of that name
    prog = os.path.join(wrapdir, name)
    with open(prog, 'w') as f:
        f.write('#!/bin/sh\nexec %s %s"$@"\n' % (shell_quote(binary), '' if cmd is None else cmd + ' '))
    os.chmod(prog, 0o755)
    env = dict(os.environ, SOURCE_DATE_EPOCH=str(epoch), LC_ALL='C')
    tmp = out_path + '.tmp'
    subprocess.run(['help2man', '--no-info', '--section=1', '--manual=User Commands',
                    '--source=ringshard ' + version, '--version-string=' + version, '--name=' + summary,
                    '--include=' + include, '--output=' + tmp, prog], check=True, env=env)
    text = open(tmp).read()
    os.unlink(tmp)
    # an ISO date: help2man writes "Month Year", which mandoc cannot parse
    iso = time.strftime('%Y-%m-%d', time.gmtime(epoch))
    text, n = re.subn(r'^(\.TH \S+ "1" )"[^"]*"', r'\1"%s"' % iso, text, count=1, flags=re.M)
    if n != 1:
        sys.exit('gen_cli_docs: %s: no .TH line to date' % out_path)
    text = text.replace('.\\" DO NOT MODIFY THIS FILE!  It was generated by help2man',
                        '.\\" Generated from --help by tools/gen_cli_docs.py with help2man')
    with open(out_path, 'w') as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--binary', required=True)
    ap.add_argument('--includes', required=True)
    ap.add_argument('--man-dir', required=True)
    ap.add_argument('--completion', required=True)
    ap.add_argument('--version', required=True)
    a = ap.parse_args()
    binary = os.path.abspath(a.binary)
    main_help = run_help(binary, ['--help'])
    cmds = commands_of(main_help)
    per_cmd = {}
    for c, _ in cmds:
        h = run_help(binary, [c, '--help'])
        per_cmd[c] = {'opts': parse_options(h), 'operands': operands_of(h)}
        if not per_cmd[c]['opts']:
            sys.exit('gen_cli_docs: no options found in ringshard %s --help' % c)
    missing = [n for n in ['ringshard'] + ['ringshard-' + c for c, _ in cmds]
               if not os.path.exists(os.path.join(a.includes, n + '.h2m'))]
    if missing:
        sys.exit('gen_cli_docs: %s: missing; every command needs its include file (man/README.md)' %
                 ', '.join(os.path.join(a.includes, n + '.h2m') for n in missing))
    os.makedirs(a.man_dir, exist_ok=True)
    epoch = page_date()
    with tempfile.TemporaryDirectory() as wrapdir:
        man_page(binary, None, 'consistent-hash bucketing and migration planning',
                 os.path.join(a.includes, 'ringshard.h2m'), a.version, epoch,
                 os.path.join(a.man_dir, 'ringshard.1'), wrapdir)
        for c, summary in cmds:
            man_page(binary, c, summary, os.path.join(a.includes, 'ringshard-%s.h2m' % c), a.version, epoch,
                     os.path.join(a.man_dir, 'ringshard-%s.1' % c), wrapdir)
    os.makedirs(os.path.dirname(os.path.abspath(a.completion)), exist_ok=True)
    with open(a.completion, 'w') as f:
        f.write(completion_script(a.version, cmds, per_cmd))


if __name__ == '__main__':
    main()
