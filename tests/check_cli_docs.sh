#!/usr/bin/env bash
# The man pages and the bash completion against the command's --help
# (ctest: cli_docs). Installs the build into a scratch prefix, then, for
# every command `ringshard --help` lists:
#   - its page ringshard-COMMAND.1 is installed under share/man/man1, renders
#     without a warning (mandoc -T lint -W warning; groff -ww -z; man -l at
#     60 and 80 columns), and
#     `man -l` of it shows every option `ringshard COMMAND --help` lists;
#   - the installed completion, driven through its function in bash as
#     bash's completion engine calls it, offers every command, every option
#     of the command's --help, and for every option whose --help shows a list
#     a|b|c exactly those values; a few values given in prose too (--scheme,
#     --hash, --compat), files and directories where they belong.
# The options are read from --help here independently of
# tools/gen/gen_cli_docs.py (a line that starts with -x or --opt: its --opt and
# -x tokens before the description), so that a generator that drops one fails.
# Every page (ringshard.1 and each command's) has the sections NAME,
# SYNOPSIS, DESCRIPTION, OPTIONS, EXIT STATUS, FILES, EXAMPLES, SEE ALSO in
# that order (others may come between), none empty; its OPTIONS section
# lists every option of the command's --help, each with a meaning; every
# reference page it names (SEE ALSO, FILES, ...) by its installed path is
# installed there, under the scratch prefix (not the configured one), and
# every docs/*.md is.
# The reference docs: each command's pages (the table doc_pages below)
# mention every option of its --help; every --option in docs/*.md and
# README.md is one of some --help (or another tool's, listed in
# other_tools_options, or a typo shown on purpose, misspelt_options).
# Every path of the source tree that docs/*.md and README.md cite
# (src/..., tests/..., tools/..., fixtures/...) exists.
# Also: the README's exit-code table lists the codes `ringshard --help` does;
# `ringshard --dump-help`, which the pages are written from, has --help's
# usage lines, one item per option or operand line, its commands and exit
# codes.
# Usage: tests/check_cli_docs.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
RS=${RINGSHARD_TEST_BINARY:-$build/ringshard}
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
for t in mandoc groff man col; do
    command -v $t > /dev/null || { echo "check_cli_docs: $t not found (tools/deps.sh installs it)" >&2; exit 1; }
done
prefix=$(mktemp -d "${RINGSHARD_TEST_TMPDIR:-/tmp}/cli_docs.XXXXXX")
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" > /dev/null
man1=$prefix/share/man/man1
completion=$prefix/share/bash-completion/completions/ringshard
[ -f "$completion" ] || bad "no completion installed at share/bash-completion/completions/ringshard"

all_commands=$("$RS" --help | awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print $1; next} on {exit}')
[ -n "$all_commands" ] || bad "no commands in ringshard --help"
# those with a page and options of their own (`help CMD` is `CMD --help`)
commands=$(grep -vx help <<< "$all_commands" || true)

# options COMMAND: every option its --help lists, one a line
options() {
    "$RS" "$1" --help | grep -E '^ {1,8}(-[A-Za-z0-9], +)?--?[a-z]' | sed -E 's/^ +//; s/ {2,}.*//' |
        awk '{for (i = 1; i <= NF; i++) {t = $i; sub(/,$/, "", t);
              if (t ~ /^--?[A-Za-z0-9][a-z0-9-]*$/) print t; else if (t != "/" && t !~ /[A-Z|=\[,.]/) break}}' |
        sort -u
}
# lists COMMAND: "option value|value|..." for every option whose synopsis shows a list
lists() {
    "$RS" "$1" --help | grep -E '^ {1,8}--[a-z][a-z0-9-]* [a-z0-9_=A-Z]+(\|[a-z0-9_=A-Z]+)+( |$)' |
        awk '{print $1, $2}'
}

# complete LINE: what the completion offers at the end of LINE, sorted, one
# a line. Words split as bash splits them for completion (COMP_WORDBREAKS
# holds '=': "--opt=va" is "--opt", "=", "va").
complete_line() {
    bash -c '
        source "$1"
        line=$2
        words=()
        rest=$line
        while [ -n "$rest" ]; do
            rest=${rest#"${rest%%[! ]*}"}
            [ -z "$rest" ] && break
            w=${rest%%[ =]*}
            if [ -z "$w" ]; then w="="; fi
            words+=("$w")
            rest=${rest#"$w"}
        done
        case "$line" in *" ") words+=("") ;; esac
        COMP_WORDS=("${words[@]}")
        COMP_CWORD=$((${#words[@]} - 1))
        COMP_LINE=$line
        COMP_POINT=${#line}
        _ringshard ringshard "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
        printf "%s\n" "${COMPREPLY[@]}" | sort' _ "$completion" "$1"
}

expect_completion() {  # LINE WANT...: the completion offers exactly WANT
    local line=$1 got want
    shift
    got=$(complete_line "$line" | tr '\n' ' ')
    want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
    [ "$got" = "$want" ] || bad "completion of '$line': got [$got], want [$want]"
}

# shellcheck disable=SC2086 # one command a word
expect_completion "ringshard " $all_commands --help --version
for c in $commands; do
    page=$man1/ringshard-$c.1
    if [ ! -f "$page" ]; then
        bad "$c: no man page installed at share/man/man1/ringshard-$c.1"
        continue
    fi
    lint=$(mandoc -T lint -W warning "$page" 2>&1; groff -ww -z -man "$page" 2>&1
           for w in 60 80; do MANWIDTH=$w man -l "$page" 2>&1 > /dev/null; done)
    [ -z "$lint" ] || bad "$c: the page does not render cleanly: $lint"
    text=$(MANWIDTH=200 man -l "$page" 2>/dev/null | col -b)
    offered=" $(complete_line "ringshard $c -" | tr '\n' ' ') "
    opts=$(options "$c")
    [ -n "$opts" ] || bad "$c: no options read from its --help"
    for o in $opts; do
        grep -qE -- "(^|[^a-z0-9-])$o([^a-z0-9-]|\$)" <<< "$text" || bad "$c: $o is not in man -l ringshard-$c.1"
        [[ "$offered" == *" $o "* ]] || bad "$c: $o is not completed"
    done
    while read -r o list; do
        [ -n "$o" ] || continue
        want=$(tr '|' '\n' <<< "$list" | sed -E 's/=[A-Z]+$/=/' | sort -u)
        # shellcheck disable=SC2086 # one value a word
        got=$(complete_line "ringshard $c $o " | sort -u)
        [ "$got" = "$want" ] || bad "$c: completion of $o: got [$(echo $got)], want [$(echo $want)]"
    done < <(lists "$c" | awk '{a[$1] = a[$1] ? a[$1] "|" $2 : $2} END {for (o in a) print o, a[o]}')
done
[ -f "$man1/ringshard.1" ] || bad "no ringshard(1) installed"

# ---- --dump-help against --help ---------------------------------------------
# The pages are written from `ringshard --dump-help` (no --help text read
# back), so its parts must be --help's: for every command, its usage lines
# are the "Usage:" lines of --help, it has as many items as --help has
# option and operand lines, and every option --help lists is in the
# synopsis of one of them; the program's commands and exit codes are those
# of `ringshard --help`.
layout=$("$RS" --dump-help)
for c in $commands; do
    help=$("$RS" "$c" --help)
    want=$(sed -nE '1,/^$/ s/^(Usage: |       )(ringshard .*)$/\2/p' <<< "$help")
    got=$(awk -F'\t' -v c="$c" '$1 == c && $2 == "usage" {print $3}' <<< "$layout")
    [ -n "$got" ] && [ "$got" = "$want" ] || bad "$c: --dump-help's usage [$got], --help's [$want]"
    items=$(awk -F'\t' -v c="$c" '$1 == c && $2 == "item" {print $3}' <<< "$layout")
    n_help=$(grep -cE '^  (-|[A-Z]+\.\.\. )' <<< "$help" || true)
    n_items=$(grep -c . <<< "$items" || true)
    [ "$n_help" = "$n_items" ] || bad "$c: --help has $n_help option and operand lines, --dump-help $n_items items"
    for o in $(options "$c"); do
        grep -qE -- "(^|[ ,])$o([ ,]|\$)" <<< "$items" || bad "$c: $o is in its --help but in no item of --dump-help"
    done
done
[ "$(awk -F'\t' '$1 == "ringshard" && $2 == "command" {print $3}' <<< "$layout")" = "$all_commands" ] ||
    bad "the commands of --dump-help are not those of ringshard --help"
want=$("$RS" --help | awk '/^Exit codes:/ {on = 1; next} on && /^ +[0-9]/ {print $1; next} on {exit}')
[ "$(awk -F'\t' '$1 == "ringshard" && $2 == "exit" {print $3}' <<< "$layout")" = "$want" ] ||
    bad "the exit codes of --dump-help are not those of ringshard --help"

# ---- the pages' sections --------------------------------------------------
# the pages name the reference docs by their path under the prefix they were
# installed with ($prefix, given to `cmake --install --prefix`), not the
# one the build was configured with (/usr/local unless said otherwise)
cfg_prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
[ -n "$cfg_prefix" ] || bad "no CMAKE_INSTALL_PREFIX in $build/CMakeCache.txt"
[ "$cfg_prefix" != "$prefix" ] || bad "the scratch prefix $prefix is the configured one: the check below proves nothing"
required_sections='NAME|SYNOPSIS|DESCRIPTION|OPTIONS|EXIT STATUS|FILES|EXAMPLES|SEE ALSO'
# section PAGE_TEXT NAME: the text of that section of a rendered page
section() {
    awk -v want="$2" '/^[A-Z][A-Z ]*[A-Z]$/ {on = ($0 == want); next} on' <<< "$1"
}
check_page() {  # PAGE OPTIONS...: sections, options under OPTIONS, installed references
    local page=$1 name text heads want got o docpath rel
    shift
    name=$(basename "$page" .1)
    text=$(MANWIDTH=200 man -l "$page" 2>/dev/null | col -b)
    heads=$(grep -E '^[A-Z][A-Z ]*[A-Z]$' <<< "$text" | grep -xE "$required_sections" | paste -sd'|')
    [ "$heads" = "$required_sections" ] || bad "$name: sections [$heads], want [$required_sections] in that order"
    IFS='|' read -ra want <<< "$required_sections"
    for got in "${want[@]}"; do
        grep -q '[^[:space:]]' <<< "$(section "$text" "$got")" || bad "$name: section $got is empty"
    done
    local opts_text
    opts_text=$(section "$text" OPTIONS)
    for o in "$@"; do
        grep -qE -- "(^|[^a-z0-9-])$o([^a-z0-9-]|\$)" <<< "$opts_text" || bad "$name: $o is not under OPTIONS"
    done
    # each .TP of OPTIONS: its tag, then at least one line of meaning
    awk 'tp && NR == tp + 2 {if ($0 ~ /^\./ || $0 == "") print "no meaning given for " tag; tp = 0}
         /^\.SH/ {on = ($0 == ".SH OPTIONS"); next}
         on && /^\.TP/ {tp = NR; next}
         tp && NR == tp + 1 {tag = $0; next}' "$page" > "$prefix/meanings"
    while read -r line; do bad "$name: $line"; done < "$prefix/meanings"
    # the reference pages it names are installed where it says, under $prefix
    grep -q "$prefix/[^ ]*/ringshard/[a-z]*\.md" <<< "$(section "$text" 'SEE ALSO')" ||
        bad "$name: SEE ALSO names no reference page installed under $prefix"
    ! grep -q "$cfg_prefix/[^ ]*/ringshard/" <<< "$text" ||
        bad "$name: names the configured prefix $cfg_prefix, not $prefix it was installed under"
    ! grep -q "source tree" <<< "$text" || bad "$name: points at the source tree"
    while read -r docpath; do
        [ -f "$docpath" ] || bad "$name: names $docpath, not installed"
    done < <(grep -oE "$prefix/[A-Za-z0-9_./-]*ringshard/[A-Za-z0-9_.-]+\.md" <<< "$text" | sort -u)
}
for c in $commands; do
    [ -f "$man1/ringshard-$c.1" ] || continue
    # shellcheck disable=SC2046 # one option a word
    check_page "$man1/ringshard-$c.1" $(options "$c" | grep -vxE -- '-h|--help')
done
[ -f "$man1/ringshard.1" ] && check_page "$man1/ringshard.1" --help --version
docdir=$(find "$prefix" -path '*/doc/ringshard' -type d | head -1)
for f in "$src"/docs/*.md; do
    if [ -z "$docdir" ] || [ ! -f "$docdir/$(basename "$f")" ]; then
        bad "docs/$(basename "$f") is not installed under share/doc/ringshard"
    fi
done
if grep -q '](img/' "$src"/docs/*.md && { [ -z "$docdir" ] || [ ! -d "$docdir/img" ]; }; then
    bad "docs/img is referenced but not installed"
fi

# ---- the reference docs: each command's pages name every option -----------
# doc_pages[COMMAND]: the docs/ pages that document it (those that exist
# count; a command with none fails); the groups of
# options several commands share are documented once: the ring options in
# rings.md, the input options in bucket.md's table
declare -A doc_pages=(
    [bucket]="bucket.md rings.md"
    [dedup]="dedup.md bucket.md rings.md"
    [plan]="plan.md bucket.md rings.md"
    [verify]="plan.md"
    [compact]="compact.md"
    [stats]="stats.md bucket.md rings.md"
    [simulate]="stats.md rings.md"
    [locate]="locate.md rings.md"
    [ring]="locate.md rings.md"
    [cat]="cat.md bucket.md"
    [repair]="repair.md failures.md compact.md"
)
for c in $commands; do
    pages=
    for p in ${doc_pages[$c]:-}; do
        [ -f "$src/docs/$p" ] && pages="$pages $p"
    done
    pages=${pages# }
    if [ -z "$pages" ]; then
        bad "$c: no docs page for it in the table doc_pages of tests/check_cli_docs.sh"
        continue
    fi
    for o in $(options "$c" | grep -vxE -- '-h|--help|--version'); do
        found=0
        for p in $pages; do
            grep -qE -- "(^|[^A-Za-z0-9_-])$o([^a-z0-9-]|\$)" "$src/docs/$p" && { found=1; break; }
        done
        [ $found = 1 ] || bad "$c: $o is in its --help but in none of docs/{${pages// /,}}"
    done
done

# ---- every --option the docs name exists ---------------------------------
# other programs' options the docs show in their own commands
other_tools_options=(
    --bind-to --hostfile --cpus-per-task --ntasks-per-node  # mpirun, srun
    --build --install --prefix --test-dir --output-on-failure  # cmake, ctest
    --static                                                # pkg-config
    --check                                                 # xz
    --long                                                  # zstd
    --parallel                                              # sort
    --warmup --runs                                         # hyperfine
    --mpi --clients                                         # tools/deps.sh
    --rows --dup-share --newline-share                      # tools/gen/gen_bills.c
    --groups --workaround                                   # tools/bench/bench_rowmove.c, isal_placement.c
)
# misspellings the docs show on purpose (the suggestion for a typo)
misspelt_options=(--kye)
known=$( { "$RS" --help; for c in $commands; do "$RS" "$c" --help; done; } |
    grep -oE -- '(^|[^A-Za-z0-9_-])--[a-z][a-z0-9-]*' | grep -oE -- '--[a-z][a-z0-9-]*'
    printf '%s\n' --help --version --dump-options --dump-help "${other_tools_options[@]}" "${misspelt_options[@]}")
while IFS=: read -r f o; do
    grep -qxF -- "$o" <<< "$known" || bad "${f#"$src"/}: $o is an option of no command's --help"
done < <(cd "$src" && grep -oE -- '(^|[^A-Za-z0-9_/-])--[a-z][a-z0-9-]*' docs/*.md README.md |
         sed -E 's/^([^:]*):.*(--[a-z][a-z0-9-]*)$/\1:\2/' | sort -u)

# values --help gives in prose, and what completes files and directories
expect_completion "ringshard bucket --scheme " ring ketama slots modulo jump
expect_completion "ringshard locate --hash m" murmur3_128 murmur3_32 murmur64a_java md5_ketama
expect_completion "ringshard ring --compat libm" libmemcached libmemcached-spy
expect_completion "ringshard plan --order " unsigned signed
expect_completion "ringshard plan --wave-order " smallest largest
expect_completion "ringshard bucket --on-bad-row q" quarantine=
expect_completion "ringshard bucket --compress=z" zstd
expect_completion "ringshard dedup --keep=" first last
expect_completion "ringshard simulate --key-pattern " seq random
(
    cd "$prefix"
    mkdir -p dir.d && touch file.f
    expect_completion "ringshard bucket -o " bin dir.d include lib share
    expect_completion "ringshard bucket --nodes-file fi" file.f
    expect_completion "ringshard bucket --on-bad-row=quarantine=fi" file.f
    expect_completion "ringshard verify " bin dir.d include lib share
    expect_completion "ringshard bucket --level " 
    expect_completion "ringshard bucket fi" file.f
    exit $fail
) || fail=1

# ---- every file of the source tree the docs cite exists --------------------
while read -r f p; do
    [ -e "$src/$p" ] || bad "$f cites $p, which is not in the source tree"
done < <(cd "$src" && grep -oE '(^|[^A-Za-z0-9_./-])(src|tests|tools|fixtures|include|docs|man|fuzz|\.ci)/[A-Za-z0-9_./*<>-]*[A-Za-z0-9_*>]' \
             docs/*.md README.md | sed -E 's/^([^:]*):[^A-Za-z.]*/\1 /' | grep -v '[*<>]' | sort -u)

# the README's exit codes are the command's
readme=$(sed -n '/^## Exit codes/,/^## /p' "$src/README.md" | grep -oE '^\| [0-9]+ ' | tr -dc '0-9\n' | sort -n | tr '\n' ' ')
helped=$("$RS" --help | sed -n '/^Exit codes:/,$p' | grep -oE '^ +[0-9]+ ' | tr -dc '0-9\n' | sort -n | tr '\n' ' ')
[ -n "$readme" ] && [ "$readme" = "$helped" ] || bad "exit codes: README.md lists [$readme], ringshard --help [$helped]"

[ $fail = 0 ] && echo "check_cli_docs: $(echo $commands | wc -w) commands: pages, options and completion agree with --help"
exit $fail
