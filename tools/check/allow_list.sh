# Allow lists of the source checks (tools/check/check_sizes.sh,
# tools/check/check_layers.sh), sourced by them. An allow list holds lines
# "FILE KEY REASON..." ('#' starts a comment): a finding of the check
# (FILE, KEY) is accepted when listed with a reason, and an entry that is
# no finding any more fails, so that the list stays exact.

# allow_has ALLOW FILE KEY: whether ALLOW lists FILE KEY with a reason.
allow_has() {
    awk -v f="$2" -v k="$3" '!/^#/ && $1 == f && $2 == k && NF >= 3 { found = 1 } END { exit !found }' "$1"
}

# allow_stale TOOL ALLOW FINDINGS WHAT: every entry of ALLOW without a
# reason, or whose FILE KEY is not among FINDINGS (lines FILE<TAB>KEY...),
# said on stderr as "TOOL: ALLOW: FILE KEY is WHAT (any more): remove the
# entry". Returns 1 if there was any, 0 otherwise.
allow_stale() {
    local tool=$1 allow=$2 findings=$3 what=$4 file key reason bad=0
    while read -r file key reason; do
        case "$file" in '' | '#'*) continue ;; esac
        if [ -z "$reason" ]; then
            echo "$tool: $allow: $file $key: no reason given" >&2
            bad=1
        elif ! printf '%s\n' "$findings" |
                awk -F'\t' -v f="$file" -v k="$key" '$1 == f && $2 == k { found = 1 } END { exit !found }'; then
            echo "$tool: $allow: $file $key is $what (any more): remove the entry" >&2
            bad=1
        fi
    done < "$allow"
    return "$bad"
}
