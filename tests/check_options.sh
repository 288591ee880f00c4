#!/usr/bin/env bash
# The option table against what the command does (ctest: options). Reads
# `ringshard --dump-options` (one TSV row per option of every command:
# command, long, short, placeholder, kind, min, max, values, repeat,
# checked (parse, or run: once every option is in), help;
# src/util/opt.h) and installs the build into a scratch prefix, then, for
# every command and every option its --help lists:
#   - the option is a row of the dump, with help;
#   - it is in the command's installed man page and offered by the installed
#     completion;
#   - it parses: given a value of its kind (an enum's first value, an
#     integer's or size's minimum, a word otherwise) before --help, the
#     command exits 0; an integer above its maximum is refused with exit 64
#     naming the option or the one it sets (as it is read, or for the ring options and plan's
#     node counts, checked once all are in, when the ring is made: probed
#     with `ring` or `plan --add 1`); given twice, a row whose rule is "refuse" is
#     refused with exit 64 ("given twice"), one whose rule is "accumulate"
#     is taken;
# and an option of several commands has the same kind, range, values and
# repeat rule in every one (but for the exceptions listed below, each with
# its reason).
# Usage: tests/check_options.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
RS=${RINGSHARD_TEST_BINARY:-$build/ringshard}
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
work=$(mktemp -d "${RINGSHARD_TEST_TMPDIR:-/tmp}/options.XXXXXX")
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > /dev/null
man1=$work/prefix/share/man/man1
completion=$work/prefix/share/bash-completion/completions/ringshard
dump=$("$RS" --dump-options)
[ -n "$dump" ] || bad "ringshard --dump-options printed nothing"
# same name, another meaning on purpose: COMMAND OPTION REASON
exceptions='compact --memory bounds the merge of key indexes alone (at least 2M), not the pipeline'
commands=$("$RS" --help | awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print $1; next} on {exit}')

# options COMMAND: every option its --help lists (as tests/check_cli_docs.sh reads them)
options() {
    "$RS" "$1" --help | grep -E '^ {1,8}(-[A-Za-z0-9], +)?--?[a-z]' | sed -E 's/^ +//; s/ {2,}.*//' |
        awk '{for (i = 1; i <= NF; i++) {t = $i; sub(/,$/, "", t);
              if (t ~ /^--?[A-Za-z0-9][a-z0-9-]*$/) print t; else if (t != "/" && t !~ /[A-Z|=\[,.]/) break}}' |
        sort -u
}
cd "$work"
checked=0
for c in $commands; do
    rows=$(awk -F'\t' -v c="$c" '$1 == c' <<< "$dump")
    [ -n "$rows" ] || { bad "$c: no rows in the dump"; continue; }
    text=$(MANWIDTH=200 man -l "$man1/ringshard-$c.1" 2>/dev/null | col -b)
    for o in $(options "$c"); do
        [ "$o" = -h ] || [ "$o" = --help ] && continue
        row=$(awk -F'\t' -v o="$o" '$2 == o || $3 == o' <<< "$rows" | head -1)
        [ -n "$row" ] || { bad "$c: $o is in its --help but not in the dump"; continue; }
        IFS=$'\t' read -r _ long short arg kind min max values repeat when help <<< "$row"
        [ -n "$help" ] && [ "$help" != - ] || bad "$c $o: no help"
        # every backslash of the field escapes one (\\) or a newline (\n)
        h=${help//\\\\/}
        [[ ${h//\\n/} != *\\* ]] || bad "$c $o: a backslash of its help not escaped in the dump: $help"
        grep -qE -- "(^|[^a-z0-9-])$o([^a-z0-9-]|\$)" <<< "$text" || bad "$c: $o is not in its man page"
        grep -qF -- "$long" "$completion" || bad "$c: $long is not in the completion"
        [ "$o" = "$long" ] || continue
        case $kind in
            flag|count|help) value=() ;;
            enum) value=("${values%%|*}"); value[0]=${value[0]%FILE} ;;
            int|size) value=("$min") ;;
            number) value=(2) ;;
            *) value=(x) ;;
        esac
        [ "${value[0]:-}" = quarantine= ] && value=(skip)
        "$RS" "$c" "$long" "${value[@]}" --help > /dev/null 2> err || bad "$c: $long ${value[*]} does not parse: $(cat err)"
        checked=$((checked + 1))
        if [ "$kind" = int ] && [ "$max" != 18446744073709551615 ] && [ "$max" -ge 0 ] 2>/dev/null; then
            probe=("$c" "$long" $((max + 1)) --help)
            if [ "$when" = run ] && awk -F'\t' -v o="$long" '$1 == "ring" && $2 == o {f = 1} END {exit !f}' <<< "$dump"; then
                probe=(ring "$long" $((max + 1)))
            elif [ "$when" = run ]; then
                probe=("$c" "$long" $((max + 1)) --add 1)
            fi
            rc=0; "$RS" "${probe[@]}" > /dev/null 2> err || rc=$?
            # a value checked once all are in is named by the option it sets
            # (--slots: --vnodes, plan's --old-nodes: --nodes)
            [ $rc = 64 ] && { grep -q -- "$long" err || { [ "$when" = run ] && grep -q "out of range" err; }; } || bad "$c: $long $((max + 1)) (above $max): exit $rc, $(cat err)"
        fi
        [ "$kind" = help ] && continue
        rc=0; "$RS" "$c" "$long" "${value[@]}" "$long" "${value[@]}" --help > /dev/null 2> err || rc=$?
        if [ "$repeat" = refuse ]; then
            [ $rc = 64 ] && grep -q "given twice" err || bad "$c: $long given twice: exit $rc, $(cat err)"
        else
            [ $rc = 0 ] || bad "$c: $long given twice (accumulates): exit $rc, $(cat err)"
        fi
    done
done
# the same option alike everywhere: kind, min, max, values, repeat
while read -r long; do
    bad "$long: described differently across the commands: $(awk -F'\t' -v o="$long" '$2 == o {print $1": "$5" "$6" "$7" "$8" "$9}' <<< "$dump" | paste -sd';')"
done < <(grep -vF -f <(awk '{print $1 "\t" $2 "\t"}' <<< "$exceptions") <<< "$dump" |
         awk -F'\t' '{print $2 "\t" $5 "\t" $6 "\t" $7 "\t" $8 "\t" $9}' | sort -u |
         awk -F'\t' '{n[$1]++} END {for (o in n) if (n[o] > 1) print o}')
[ $fail = 0 ] && echo "check_options: $checked options of $(echo $commands | wc -w) commands parse, are documented and agree"
exit $fail
