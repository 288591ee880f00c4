#!/usr/bin/env python3
"""Where did each paragraph of an old document go? For moving text between
pages without losing a fact: every paragraph, table row and list item of
OLD is matched, by its facts (numbers, `code`, file names, long words),
against the NEW files, and listed with the file that holds most of them and
the share found there. Paragraphs whose facts are found nowhere are the
ones to look at.

Usage: tools/dev/doc_coverage.py OLD NEW... [--below 0.8]
  OLD may be REV:PATH (git show), e.g. 755ed82:README.md
Prints one line per paragraph: share, best file, the paragraph's start;
exit 1 if any paragraph is below the threshold.
"""
import re
import subprocess
import sys


def read(spec):
    if re.match(r'^[0-9a-f]{6,40}:', spec):
        return subprocess.run(['git', 'show', spec], check=True, capture_output=True, text=True).stdout
    return open(spec).read()


def units(text):
    """Paragraphs, table rows and list items, with their first line number."""
    out, cur, start, fence = [], [], 0, False
    for n, line in enumerate(text.split('\n'), 1):
        if line.startswith('```'):
            fence = not fence
        if not fence and (not line.strip() or line.startswith('|') or re.match(r'^\s*[-*] ', line)
                          or line.startswith('#')):
            if cur:
                out.append((start, ' '.join(cur)))
                cur = []
            if line.startswith('|') or line.startswith('#'):
                if not re.match(r'^\|[\s:|-]+\|?$', line):
                    out.append((n, line))
                continue
            if not line.strip():
                continue
        if not cur:
            start = n
        cur.append(line.strip())
    if cur:
        out.append((start, ' '.join(cur)))
    return out


def facts(par):
    """What a paragraph states that survives rewording."""
    f = set(re.findall(r'`([^`]+)`', par))
    f |= set(re.findall(r'\b\d[\d,.]*\d\b|\b\d{2,}\b', par))
    f |= {w.lower() for w in re.findall(r'[A-Za-z][A-Za-z_-]{9,}', par)}
    return f


def norm(t):
    return re.sub(r'\s+', ' ', t).lower()


def main():
    args = sys.argv[1:]
    below = 0.8
    if '--below' in args:
        i = args.index('--below')
        below = float(args[i + 1])
        del args[i:i + 2]
    old, new = args[0], args[1:]
    texts = {p: norm(read(p)) for p in new}
    bad = 0
    for line, par in units(read(old)):
        fs = facts(par)
        if not fs:
            continue
        best, share = None, -1.0
        for p, t in texts.items():
            s = sum(1 for x in fs if norm(x) in t) / len(fs)
            if s > share:
                best, share = p, s
        mark = '  ' if share >= below else '!!'
        bad += share < below
        print('%s %4.2f %-28s %5d: %s' % (mark, share, best, line, par[:90]))
    print('%d of the paragraphs below %.2f' % (bad, below), file=sys.stderr)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
